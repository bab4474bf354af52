"""A process this host started, recorded so that it alone is ever signalled.

A process id is reused once its process is gone: a tenant who forks a few thousand times moves
the host's counter wherever it likes, and a worker that kills "the pid it wrote down" may kill
the API, Temporal or the database instead. So a record is the pid *and* the time the process
started (`/proc/<pid>/stat`, field 22: clock ticks since boot, which no later process with the
same pid can share), and a signal goes only through a pidfd: opened first, then the start time
and the command line checked again. The pidfd pins the process it was opened on, so a pid
reused after the check is never hit (`pidfd_send_signal` then says the process is gone), and
a check that passed was made of that very process.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

from sandbox.files import write_atomically


@dataclass(frozen=True)
class ProcessRecord:
    pid: int
    started: int
    """Field 22 of `/proc/<pid>/stat` when it was recorded."""

    def text(self) -> str:
        return f"{self.pid} {self.started}"

    @classmethod
    def parse(cls, text: str) -> ProcessRecord | None:
        """A record as `text` wrote it; None for anything else (an older bare pid too: with no
        start time it proves nothing, and is never signalled)."""
        parts = text.split()
        if len(parts) != 2 or not all(part.isdigit() for part in parts):
            return None
        return cls(int(parts[0]), int(parts[1]))


def start_time(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot), or None when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command's name (field 2) is in parentheses and may hold spaces and parentheses itself.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])  # field 22: the fields after the name start at field 3
    except (IndexError, ValueError):
        return None


def record_of(pid: int) -> ProcessRecord | None:
    started = start_time(pid)
    return None if started is None else ProcessRecord(pid, started)


def write(path: Path, pid: int) -> None:
    """Record `pid` (a process of this host's, alive now) at `path`."""
    record = record_of(pid)
    write_atomically(path, record.text() if record is not None else str(pid))


def read(path: Path) -> ProcessRecord | None:
    try:
        return ProcessRecord.parse(path.read_text())
    except OSError:
        return None


def _is(record: ProcessRecord, marker: bytes | None) -> bool:
    if start_time(record.pid) != record.started:
        return False
    if marker is None:
        return True
    try:
        return marker in Path(f"/proc/{record.pid}/cmdline").read_bytes()
    except OSError:
        return False


def alive(record: ProcessRecord | None, marker: bytes | None = None) -> bool:
    """Whether the recorded process still runs (its start time, and `marker` in its command line)."""
    return record is not None and _is(record, marker)


def send(record: ProcessRecord | None, marker: bytes | None = None, signal_number: int = signal.SIGKILL) -> bool:
    """Signal the recorded process if, and only if, it is still that process; whether it was."""
    if record is None:
        return False
    try:
        pidfd = os.pidfd_open(record.pid)
    except OSError:
        return False
    try:
        if not _is(record, marker):
            return False
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal_number)
            return True
        return False
    finally:
        os.close(pidfd)
