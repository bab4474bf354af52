"""A container's cgroups: memory, processes and CPU for all it runs, and a freezer to stop it.

RLIMIT_NPROC does not bind a uid shared by many processes, nor what runs as root; a cgroup
bounds each container whatever its processes are. cgroup v2 (one hierarchy, `cgroup.kill`,
`cgroup.freeze`) and v1 (a hierarchy per controller: `memory`, `pids`, `cpu`, and `freezer`
where it is mounted) are both read; a host with neither writable gets no cgroup
(`Cgroups.open` says why), and its containers are bounded by rlimits alone.

Each container is a small tree, the same in every hierarchy, under its host's own cgroup
(`<scope>`: one a `SANDBOX_DIR`, so that a host's chores touch its own containers' cgroups
alone, whatever other hosts share the machine):

    durable-responses/<scope>/<container id>/   the container's memory, processes and CPU in all
        tenant/                              what its code may use: an OOM here kills here
            interpreter/                     its Python interpreter: frozen between calls
            commands/                        its shell commands
        service/                             the launchers and the egress proxy that serve it:
                                             counted against the container, never killed by
                                             its code's OOM

A process joins its cgroup itself before it starts anything (`join`: the launcher joins
`service`, its child joins `tenant/...` before it becomes the sandbox), so everything it
starts counts against the container.

Killing is done by the kernel's own list of members, never by a pid remembered elsewhere: the
tree is frozen (no process in it can fork, exit or be reaped meanwhile, so no pid read from it
can be reused), each member killed, and the tree thawed (`kill`); v2 has `cgroup.kill` for it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "durable-responses"
V1_CONTROLLERS = ("memory", "pids", "cpu")
V1_FREEZER = "freezer"
CPU_PERIOD_US = 100_000
SERVICE_MEMORY_BYTES = 256 * 1024 * 1024
"""What a container's launchers and egress proxy may use beside its code's memory."""
SERVICE_PROCESSES = 64
FREEZE_SECONDS = 5.0
TENANT, SERVICE, INTERPRETER, COMMANDS = "tenant", "service", "tenant/interpreter", "tenant/commands"
PARTS = (TENANT, SERVICE, INTERPRETER, COMMANDS)


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
    """One cgroup: a directory per hierarchy (one on v2), and where it is frozen (None: no
    freezer on this host)."""

    directories: tuple[Path, ...]
    version: int
    freezer: Path | None

    def child(self, name: str) -> Cgroup:
        return Cgroup(
            tuple(directory / name for directory in self.directories),
            self.version,
            None if self.freezer is None else self.freezer / name,
        )

    def join(self, pid: int) -> None:
        for directory in self._all():
            (directory / "cgroup.procs").write_text(str(pid))

    def _all(self) -> tuple[Path, ...]:
        if self.freezer is None or self.freezer in self.directories:
            return self.directories
        return (*self.directories, self.freezer)

    def pids(self) -> set[int]:
        """Every process in it and in the cgroups under it."""
        found: set[int] = set()
        for directory in self._all():
            for procs in _tree_files(directory, "cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    found |= {int(line) for line in procs.read_text().split()}
        return found

    def frozen(self) -> bool:
        if self.freezer is None:
            return False
        with contextlib.suppress(OSError):
            if self.version == 2:
                return "frozen 1" in (self.freezer / "cgroup.events").read_text()
            return (self.freezer / "freezer.state").read_text().strip() == "FROZEN"
        return False

    def freeze(self) -> bool:
        """Stop every process in it (and under it) where it stands; whether it is frozen."""
        if self.freezer is None:
            return False
        with contextlib.suppress(OSError):
            if self.version == 2:
                (self.freezer / "cgroup.freeze").write_text("1")
            else:
                (self.freezer / "freezer.state").write_text("FROZEN")
        deadline = time.monotonic() + FREEZE_SECONDS
        while not self.frozen():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)
        return True

    def thaw(self) -> None:
        if self.freezer is None:
            return
        with contextlib.suppress(OSError):
            if self.version == 2:
                (self.freezer / "cgroup.freeze").write_text("0")
            else:
                (self.freezer / "freezer.state").write_text("THAWED")

    def kill(self) -> None:
        """Every process in it and under it, as the kernel lists them."""
        if self.version == 2:
            with contextlib.suppress(OSError):
                (self.directories[0] / "cgroup.kill").write_text("1")
                return
        frozen = self.freeze()
        try:
            for pid in self.pids():
                if frozen:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)  # frozen: it can neither end nor give its pid away
                else:
                    _kill_member(pid, self.directories[0])
        finally:
            # A frozen process dies of its SIGKILL once it runs again; v1 keeps a cgroup frozen on
            # its own (the interpreter's, between calls) frozen when its parent thaws.
            for below in _tree(self.freezer) if self.freezer is not None else ():
                Cgroup((below,), self.version, below).thaw()

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
        """Kill what is left in it, and remove it with the cgroups under it."""
        for _ in range(50):
            self.kill()
            if not self.pids():
                break
            time.sleep(0.05)
        for directory in self._all():
            for below in sorted(_tree(directory), key=lambda path: len(path.parts), reverse=True):
                with contextlib.suppress(OSError):
                    below.rmdir()


def _tree(directory: Path) -> Iterator[Path]:
    """A cgroup's directory and every cgroup under it."""
    if not directory.is_dir():
        return
    yield directory
    for entry in directory.iterdir():
        if entry.is_dir():
            yield from _tree(entry)


def _tree_files(directory: Path, name: str) -> Iterator[Path]:
    for each in _tree(directory):
        yield each / name


def _kill_member(pid: int, directory: Path) -> None:
    """Kill `pid` if it is (still) in the cgroup at `directory` or under it: with no freezer, a
    member read from the list may have ended and its pid been reused since."""
    parts = directory.parts
    where = "/" + "/".join(parts[parts.index(PARENT) :]) if PARENT in parts else None
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        member = Path(f"/proc/{pid}/cgroup").read_text()
        if where is None or not any(
            (path + "/").startswith(where + "/") for path in (line.split(":", 2)[-1] for line in member.splitlines())
        ):
            return
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        return
    finally:
        os.close(pidfd)


@dataclass(frozen=True)
class ContainerCgroup:
    """One container's tree of cgroups (the module's docstring draws it)."""

    top: Cgroup

    @property
    def tenant(self) -> Cgroup:
        return self.top.child(TENANT)

    @property
    def service(self) -> Cgroup:
        return self.top.child(SERVICE)

    @property
    def interpreter(self) -> Cgroup:
        return self.top.child(INTERPRETER)

    @property
    def commands(self) -> Cgroup:
        return self.top.child(COMMANDS)

    def complete(self) -> bool:
        return all(directory.is_dir() for part in PARTS for directory in self.top.child(part)._all())


class Cgroups:
    """Where this host's containers' cgroups are made."""

    def __init__(self, version: int, parents: tuple[Path, ...], freezer: Path | None) -> None:
        self.version = version
        self.parents = parents
        self.freezer = freezer

    @classmethod
    def open(cls, scope: str, root: Path = ROOT) -> Cgroups:
        """The writable hierarchy of this host: v2 if it is mounted at `root` with the memory
        and pids controllers, else v1's `memory`, `pids` and `cpu` (and `freezer` where it is
        mounted); `CgroupUnavailable` says why neither is. Its containers' cgroups are made
        under `durable-responses/<scope>`."""
        controllers = root / "cgroup.controllers"
        if controllers.exists():
            available = set(controllers.read_text().split())
            if not {"memory", "pids"} <= available:
                raise CgroupUnavailable(f"cgroup v2 at {root} lacks the memory or pids controller")
            parent = root / PARENT / scope
            try:
                wanted = " ".join(f"+{name}" for name in ("memory", "pids", "cpu") if name in available)
                for level in (root, root / PARENT, parent):
                    level.mkdir(exist_ok=True)
                    (level / "cgroup.subtree_control").write_text(wanted)
            except OSError as error:
                raise CgroupUnavailable(f"cgroup v2 at {root} is not writable here ({error.strerror})") from None
            return cls(2, (parent,), parent)
        parents = []
        for controller in V1_CONTROLLERS:
            hierarchy = root / controller
            if not (hierarchy / "cgroup.procs").exists():
                raise CgroupUnavailable(f"no cgroup v1 hierarchy for {controller} at {hierarchy}")
            parent = hierarchy / PARENT / scope
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise CgroupUnavailable(f"cgroup v1 at {hierarchy} is not writable here ({error.strerror})") from None
            parents.append(parent)
        freezer: Path | None = root / V1_FREEZER / PARENT / scope
        try:
            if not (root / V1_FREEZER / "cgroup.procs").exists():
                raise OSError("no freezer hierarchy")
            freezer.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        except OSError:
            freezer = None
        return cls(1, tuple(parents), freezer)

    def _top(self, name: str) -> Cgroup:
        return Cgroup(
            tuple(parent / name for parent in self.parents),
            self.version,
            None if self.freezer is None else self.freezer / name,
        )

    def make(self, name: str, limits: CgroupLimits) -> ContainerCgroup:
        """The container `name`'s tree with `limits` (made, or found and set again)."""
        tree = ContainerCgroup(self._top(name))
        for part in ("", *PARTS):
            for directory in (tree.top.child(part) if part else tree.top)._all():
                directory.mkdir(exist_ok=True)
        quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
        top, tenant = tree.top.directories, tree.tenant.directories
        if self.version == 2:
            _write(top[0] / "cgroup.subtree_control", "+memory +pids" + (" +cpu" if _has_cpu(top[0]) else ""))
            _write(top[0] / "memory.max", str(limits.memory_bytes + SERVICE_MEMORY_BYTES))
            _write(top[0] / "pids.max", str(limits.max_processes + SERVICE_PROCESSES))
            _write(top[0] / "cpu.max", f"{quota} {CPU_PERIOD_US}", optional=True)
            _write(tenant[0] / "memory.max", str(limits.memory_bytes))
            _write(tenant[0] / "memory.swap.max", "0", optional=True)
            _write(tenant[0] / "pids.max", str(limits.max_processes))
        else:
            (memory, pids, cpu), (tenant_memory, tenant_pids, _) = top, tenant
            _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes + SERVICE_MEMORY_BYTES))
            _write(pids / "pids.max", str(limits.max_processes + SERVICE_PROCESSES))
            _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US), optional=True)
            _write(cpu / "cpu.cfs_quota_us", str(quota), optional=True)
            _write(tenant_memory / "memory.limit_in_bytes", str(limits.memory_bytes))
            _write(tenant_memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes), optional=True)
            _write(tenant_pids / "pids.max", str(limits.max_processes))
        return tree

    def retire(self) -> None:
        """Remove this host's own cgroup, once no container of it has one (a host gone for
        good: a test's, say)."""
        for parent in {*self.parents, *([self.freezer] if self.freezer is not None else [])}:
            with contextlib.suppress(OSError):
                parent.rmdir()

    def names(self) -> list[str]:
        """The containers that have a tree here."""
        try:
            return sorted(entry.name for entry in self.parents[0].iterdir() if entry.is_dir())
        except OSError:
            return []

    def find(self, name: str) -> ContainerCgroup | None:
        """The container's tree, if it has one (one made before this layout has no `tenant`: it
        is found as a tree all the same, to be killed and removed)."""
        top = self._top(name)
        return ContainerCgroup(top) if all(directory.is_dir() for directory in top.directories) else None


def _has_cpu(directory: Path) -> bool:
    with contextlib.suppress(OSError):
        return "cpu" in (directory / "cgroup.controllers").read_text().split()
    return False


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    try:
        path.write_text(value)
    except OSError:
        if not optional:
            raise
