"""What a confined process may spend, as one record, and how the process takes it on.

The kernel enforces four of the limits (`setrlimit`): CPU seconds (SIGXCPU, then SIGKILL a
second later), address space (an allocation past it fails: Python raises `MemoryError`), the
size of any file it writes and the files it may have open. The parent enforces the other two (`sandbox/process.py`): the
wall-clock time (the process group is killed) and the bytes it may write to its output.
`nice` lowers its priority, so that on a busy machine the API is served first.

A process applies its limits to itself first thing (`apply`), so no code runs between
`fork` and `exec` in the parent, whose threads (Temporal's among them) could hold a lock the
child would wait on forever.
"""

from __future__ import annotations

import json
import os
import resource
from dataclasses import asdict, dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class ResourceLimits:
    """None: no such limit (a sandbox's memory is its cgroup's, not its address space)."""

    cpu_seconds: int | None = 60
    memory_bytes: int | None = 512 * MiB
    """Address space: what the process may map, its libraries included."""
    wall_seconds: float = 120.0
    output_bytes: int = 16 * MiB
    """What the parent reads of its standard output before it stops the process."""
    file_bytes: int | None = 0
    """The largest file it may write (0: none at all)."""
    open_files: int | None = None
    nice: int = 0

    def apply(self) -> None:
        """Take these limits on, in the process that is to live under them."""
        if self.cpu_seconds is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + 1))
        if self.memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        if self.file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_bytes, self.file_bytes))
        if self.open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, self.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.nice:
            os.nice(self.nice)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ResourceLimits:
        return cls(**json.loads(text))
