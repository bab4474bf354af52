"""What a launcher runs (`sandbox/launcher.py`), as the worker writes it into a run's
`run.json` (`sandbox/runs.py`): standard library only, so the launcher starts quickly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from sandbox.bubblewrap import Launch
from sandbox.identity import Identity
from sandbox.limits import ResourceLimits


@dataclass(frozen=True)
class RunSpec:
    bwrap: str
    launch: Launch
    limits: ResourceLimits
    timeout_seconds: float | None
    cgroup: Sequence[str] = ()
    """The cgroup directories the command joins (its container's `tenant/...`)."""
    service_cgroup: Sequence[str] = ()
    """The cgroup directories its launcher joins (its container's `service`)."""
    identity: Identity | None = None
    """The uid and gid bwrap runs as, when the worker is root (None: the worker's own)."""
    seccomp: str | None = None
    """The BPF program of the sandbox's seccomp filter (`sandbox/seccomp.py`)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "bwrap": self.bwrap,
            "launch": self.launch.to_json(),
            "limits": asdict(self.limits),
            "timeout_seconds": self.timeout_seconds,
            "cgroup": list(self.cgroup),
            "service_cgroup": list(self.service_cgroup),
            "identity": None if self.identity is None else asdict(self.identity),
            "seccomp": self.seccomp,
        }

    @classmethod
    def from_json(cls, said: dict[str, Any]) -> RunSpec:
        return cls(
            bwrap=said["bwrap"],
            launch=Launch.from_json(said["launch"]),
            limits=ResourceLimits(**said["limits"]),
            timeout_seconds=said["timeout_seconds"],
            cgroup=said["cgroup"],
            service_cgroup=said["service_cgroup"],
            identity=None if said["identity"] is None else Identity(**said["identity"]),
            seccomp=said["seccomp"],
        )
