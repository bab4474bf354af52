"""A process's resident memory, as Linux counts it (`/proc/<pid>/status`), and its peak since a
reset (`clear_refs`), for tests that bound what an attack may cost."""

from __future__ import annotations

from pathlib import Path


def status(pid: int | str, field: str) -> int:
    """A /proc status field, in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def reset_peak(pid: int | str) -> int:
    """Start measuring the peak resident memory afresh (Linux's clear_refs); the RSS now, KiB."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return status(pid, "VmRSS")


def peak(pid: int | str) -> int:
    """The peak resident memory since the last reset, KiB."""
    return status(pid, "VmHWM")
