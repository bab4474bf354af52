"""What a confined process may spend, as one record, and how the process takes it on.

The kernel enforces three of the limits (`setrlimit`): CPU seconds (SIGXCPU, then SIGKILL a
second later), address space (an allocation past it fails: Python raises `MemoryError`) and
the size of any file it writes. The parent enforces the other two (`sandbox/process.py`): the
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
    cpu_seconds: int = 60
    memory_bytes: int = 512 * MiB
    """Address space: what the process may map, its libraries included."""
    wall_seconds: float = 120.0
    output_bytes: int = 16 * MiB
    """What the parent reads of its standard output before it stops the process."""
    file_bytes: int = 0
    """The largest file it may write (0: none at all)."""
    nice: int = 0

    def apply(self) -> None:
        """Take these limits on, in the process that is to live under them."""
        resource.setrlimit(resource.RLIMIT_CPU, (self.cpu_seconds, self.cpu_seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_bytes, self.file_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.nice:
            os.nice(self.nice)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ResourceLimits:
        return cls(**json.loads(text))
