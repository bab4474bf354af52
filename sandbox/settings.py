"""How this server runs code (`code_interpreter`, the hosted `shell`): which runtime, where a
worker keeps its containers, and what a container and a command may have. Read from the
environment (`from_env`), the same in every process: the API checks requests against it,
the workers run with it.

    SANDBOX_RUNTIME            bubblewrap (the default on Linux, where `bwrap` is installed) or off
    SANDBOX_DIR                where a worker keeps its containers (default: the data dir's
                               `containers/`, or ./.durable-responses/containers)
    SANDBOX_MAX_MEMORY         the most memory a container may ask for: 1g, 4g (default), 16g, 64g
    SANDBOX_DISK_BYTES         each container's files, in all (default 1 GiB)
    SANDBOX_COMMAND_SECONDS    how long a code_interpreter call, or a shell call that says
                               nothing, may run (default 600)
    SANDBOX_MAX_COMMAND_SECONDS  the longest a shell call may ask for (`timeout_ms`; default 6 h)
    SANDBOX_HOST_WAIT_SECONDS  how long a command waits for its container's host to take it
                               before the host is taken to be gone (default 300)
    SANDBOX_EGRESS_ALLOWLIST   what, beyond public addresses on ports 80 and 443, a container's
                               allowed domains may reach (`sandbox/egress_rules.py`; empty by
                               default, in `dev` too; never `EGRESS_ALLOWLIST`)
    SANDBOX_UIDS               the host uids containers run as when the worker is root, one a
                               container (FIRST-LAST; default 1879048192-1879113727)

With the runtime left to choose (`auto`), a host where bwrap cannot start a sandbox as it
would (a root worker on a kernel that gives no unprivileged user a user namespace) runs no code,
and the start-up line says why; `SANDBOX_RUNTIME=bubblewrap` there is a start-up error. Code
never runs as root instead.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sandbox.egress_rules import SandboxEgress, SandboxEgressError
from sandbox.identity import DEFAULT_UIDS, IdentityError, UidRange
from sandbox.probe import refusal

MiB = 1024 * 1024
Runtime = Literal["bubblewrap", "off"]
MEMORY_CHOICES = ("1g", "4g", "16g", "64g")


class SandboxSettingError(ValueError):
    """A sandbox setting that cannot be: its message is one line naming it."""


@dataclass(frozen=True)
class SandboxSettings:
    runtime: Runtime = "off"
    directory: Path = Path(".durable-responses/containers")
    max_memory: str = "4g"
    disk_bytes: int = 1024 * MiB
    command_seconds: float = 600.0
    max_command_seconds: float = 6 * 3600.0
    output_bytes: int = 1 * MiB
    host_wait_seconds: float = 300.0
    egress_allowlist: str = ""
    """`SANDBOX_EGRESS_ALLOWLIST` (checked: `SandboxEgress.parse` reads it)."""
    uids: str = DEFAULT_UIDS
    """`SANDBOX_UIDS` (checked: `UidRange.parse` reads it)."""
    unavailable: str | None = None
    """Why code does not run here, when it could not start a sandbox (`sandbox/probe.py`)."""

    @property
    def enabled(self) -> bool:
        return self.runtime != "off"

    def egress(self) -> SandboxEgress:
        return SandboxEgress.parse(self.egress_allowlist)

    def uid_range(self) -> UidRange:
        return UidRange.parse(self.uids)

    def described(self) -> str:
        """One line for the start-up log."""
        if self.unavailable is not None:
            return (
                f"code execution: off, this host cannot sandbox code ({self.unavailable}); code_interpreter and "
                "shell tools are accepted and not offered"
            )
        if not self.enabled:
            return (
                "code execution: off (code_interpreter and shell tools are accepted and not offered; install "
                "bubblewrap, or set SANDBOX_RUNTIME=bubblewrap)"
            )
        return f"code execution: {self.runtime}, containers in {self.directory}"

    @classmethod
    def from_env(cls, data_dir: Path | None = None) -> SandboxSettings:
        chosen = os.environ.get("SANDBOX_RUNTIME", "").strip().lower()
        available = sys.platform == "linux" and shutil.which("bwrap") is not None
        if chosen in ("", "auto"):
            runtime: Runtime = "bubblewrap" if available else "off"
        elif chosen in ("off", "none"):
            runtime = "off"
        elif chosen == "bubblewrap":
            if not available:
                raise SandboxSettingError(
                    "SANDBOX_RUNTIME=bubblewrap, but `bwrap` is not installed (Debian: bubblewrap)"
                )
            runtime = "bubblewrap"
        elif chosen in ("docker", "podman"):
            raise SandboxSettingError(
                f"SANDBOX_RUNTIME={chosen} (with SANDBOX_IMAGE) is not built yet: use bubblewrap (docs/code-execution.md)"
            )
        else:
            raise SandboxSettingError(f"SANDBOX_RUNTIME must be bubblewrap or off, not {chosen!r}")
        max_memory = os.environ.get("SANDBOX_MAX_MEMORY", "4g").strip().lower()
        if max_memory not in MEMORY_CHOICES:
            raise SandboxSettingError(f"SANDBOX_MAX_MEMORY must be one of {', '.join(MEMORY_CHOICES)}")
        default_dir = (data_dir / "containers") if data_dir is not None else Path(".durable-responses/containers")
        egress_allowlist = os.environ.get("SANDBOX_EGRESS_ALLOWLIST", "")
        uids = os.environ.get("SANDBOX_UIDS", "").strip() or DEFAULT_UIDS
        try:
            SandboxEgress.parse(egress_allowlist)
            uid_range = UidRange.parse(uids)
        except (SandboxEgressError, IdentityError) as error:
            raise SandboxSettingError(str(error)) from None
        unavailable = None
        if runtime == "bubblewrap":
            unavailable = refusal(shutil.which("bwrap") or "bwrap", uid_range.first if os.geteuid() == 0 else None)
            if unavailable is not None and chosen == "bubblewrap":
                raise SandboxSettingError(
                    f"SANDBOX_RUNTIME=bubblewrap, but this host cannot sandbox code: {unavailable}"
                )
            if unavailable is not None:
                runtime = "off"
        return cls(
            runtime=runtime,
            egress_allowlist=egress_allowlist,
            uids=uids,
            unavailable=unavailable,
            directory=Path(os.environ.get("SANDBOX_DIR") or default_dir).resolve(),
            max_memory=max_memory,
            disk_bytes=_positive_int("SANDBOX_DISK_BYTES", 1024 * MiB),
            command_seconds=_positive_float("SANDBOX_COMMAND_SECONDS", 600.0),
            max_command_seconds=_positive_float("SANDBOX_MAX_COMMAND_SECONDS", 6 * 3600.0),
            host_wait_seconds=_positive_float("SANDBOX_HOST_WAIT_SECONDS", 300.0),
        )


def _positive_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    try:
        number = int(value) if value else default
    except ValueError:
        raise SandboxSettingError(f"{name} must be a whole number") from None
    if number <= 0:
        raise SandboxSettingError(f"{name} must be more than 0")
    return number


def _positive_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    try:
        number = float(value) if value else default
    except ValueError:
        raise SandboxSettingError(f"{name} must be a number") from None
    if not number > 0:
        raise SandboxSettingError(f"{name} must be more than 0")
    return number
