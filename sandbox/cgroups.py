"""A container's cgroup: memory, processes and CPU for all its commands together.

RLIMIT_NPROC does not bind uid 0, and a uid shared by every container would let one
container's fork bomb keep the next from starting; a cgroup of its own bounds each container
whatever uid its processes have. cgroup v2 (one hierarchy, `cgroup.kill`) and v1 (a hierarchy
per controller: `memory`, `pids`, `cpu`) are both read; a host with neither writable gets no
cgroup (`Cgroups.open` says why), and its containers are bounded by rlimits alone.

A process joins a container's cgroup before it starts the sandbox (`join`: the launcher's
child writes its own pid), so bwrap and everything it starts count against it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "durable-responses"
V1_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


@dataclass(frozen=True)
class CgroupLimits:
    memory_bytes: int
    max_processes: int
    cpus: float
    """How many CPUs' worth of time the container's processes may use together."""


class CgroupUnavailable(Exception):
    """No cgroup hierarchy this process may write to."""


@dataclass(frozen=True)
class Cgroup:
    """One container's cgroup: a directory per hierarchy (one on v2)."""

    directories: tuple[Path, ...]
    version: int

    def join(self, pid: int) -> None:
        for directory in self.directories:
            (directory / "cgroup.procs").write_text(str(pid))

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in self.directories:
            with contextlib.suppress(OSError):
                found |= {int(line) for line in (directory / "cgroup.procs").read_text().split()}
        return found

    def kill(self) -> None:
        """Every process in it, at once (v2's `cgroup.kill`; on v1, each one)."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.directories[0] / "cgroup.kill").write_text("1")
                return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def out_of_memory_kills(self) -> int:
        """How many processes the kernel killed in it for want of memory, so far."""
        for directory in self.directories:
            for name in ("memory.events", "memory.oom_control"):
                with contextlib.suppress(OSError):
                    for line in (directory / name).read_text().splitlines():
                        key, _, value = line.partition(" ")
                        if key == "oom_kill":
                            return int(value)
        return 0

    def remove(self) -> None:
        """Kill what is left in it, and remove it."""
        self.kill()
        for directory in self.directories:
            with contextlib.suppress(OSError):
                directory.rmdir()


class Cgroups:
    """Where this host's containers' cgroups are made."""

    def __init__(self, version: int, parents: tuple[Path, ...]) -> None:
        self.version = version
        self.parents = parents

    @classmethod
    def open(cls, root: Path = ROOT) -> Cgroups:
        """The writable hierarchy of this host: v2 if it is mounted at `root` with the memory
        and pids controllers, else v1's `memory`, `pids` and `cpu`; `CgroupUnavailable` says
        why neither is."""
        controllers = root / "cgroup.controllers"
        if controllers.exists():
            available = set(controllers.read_text().split())
            if not {"memory", "pids"} <= available:
                raise CgroupUnavailable(f"cgroup v2 at {root} lacks the memory or pids controller")
            parent = root / PARENT
            try:
                parent.mkdir(exist_ok=True)
                wanted = " ".join(f"+{name}" for name in ("memory", "pids", "cpu") if name in available)
                (root / "cgroup.subtree_control").write_text(wanted)
                (parent / "cgroup.subtree_control").write_text(wanted)
            except OSError as error:
                raise CgroupUnavailable(f"cgroup v2 at {root} is not writable here ({error.strerror})") from None
            return cls(2, (parent,))
        parents = []
        for controller in V1_CONTROLLERS:
            hierarchy = root / controller
            if not (hierarchy / "cgroup.procs").exists():
                raise CgroupUnavailable(f"no cgroup v1 hierarchy for {controller} at {hierarchy}")
            parent = hierarchy / PARENT
            try:
                parent.mkdir(exist_ok=True)
            except OSError as error:
                raise CgroupUnavailable(f"cgroup v1 at {hierarchy} is not writable here ({error.strerror})") from None
            parents.append(parent)
        return cls(1, tuple(parents))

    def make(self, name: str, limits: CgroupLimits) -> Cgroup:
        """The cgroup `name` with `limits` (made, or found and set again)."""
        directories = tuple(parent / name for parent in self.parents)
        for directory in directories:
            directory.mkdir(exist_ok=True)
        quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
        if self.version == 2:
            directory = directories[0]
            _write(directory / "memory.max", str(limits.memory_bytes))
            _write(directory / "memory.swap.max", "0", optional=True)
            _write(directory / "pids.max", str(limits.max_processes))
            _write(directory / "cpu.max", f"{quota} {CPU_PERIOD_US}", optional=True)
        else:
            memory, pids, cpu = directories
            _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
            _write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes), optional=True)
            _write(pids / "pids.max", str(limits.max_processes))
            _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US), optional=True)
            _write(cpu / "cpu.cfs_quota_us", str(quota), optional=True)
        return Cgroup(directories, self.version)

    def find(self, name: str) -> Cgroup | None:
        directories = tuple(parent / name for parent in self.parents)
        return Cgroup(directories, self.version) if all(each.is_dir() for each in directories) else None


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    try:
        path.write_text(value)
    except OSError:
        if not optional:
            raise
