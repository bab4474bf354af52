"""The containers of this host: for each, a directory, a cgroup (its memory, processes and
CPU), its interpreter, and its shell commands' runs. Everything is on disk and in the kernel,
nothing in the worker's memory: a worker that starts again finds its host's containers as
they were, and their commands still running.

    <root>/<container id>/
        data/                   /mnt/data: the container's files, on a tmpfs of its disk
                                quota (`disk_bytes`) where mounting one is allowed
        control/                /mnt/control: the interpreter's requests and answers (each
                                call's output kept up to `output_bytes`), on a tmpfs of
                                `CONTROL_BYTES`
        etc/                    the passwd and group the sandbox sees
        interpreter-<n>/        each interpreter's run (`sandbox/runs.py`)
        runs/<call id>-<n>/     each shell command's run

`SandboxUnavailable` says why this host cannot run sandboxes (no `bwrap`); without a
writable cgroup hierarchy, or the right to mount, containers run with rlimits and no disk
quota, and the start-up line says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox import bubblewrap
from sandbox.cgroups import Cgroup, CgroupLimits, Cgroups, CgroupUnavailable
from sandbox.interpreter import Interpreters
from sandbox.limits import ResourceLimits
from sandbox.own_modules import module_command
from sandbox.runs import Run, RunSpec

log = logging.getLogger(__name__)

MiB = 1024 * 1024
CONTAINER_ID = re.compile(r"^cntr_[0-9a-f]{16,64}$")
INTERPRETER_PROGRAM = Path(__file__).with_name("interpreter_main.py")
INTERPRETER_INSIDE = "/opt/durable-responses/interpreter.py"
FORWARDER_PROGRAM = Path(__file__).with_name("egress_forwarder.py")
FORWARDER_INSIDE = "/opt/durable-responses/egress_forwarder.py"
CONTROL_BYTES = 64 * MiB
CONTROL_FILES = 4096
"""The interpreter's control directory (its calls' outputs, each up to `output_bytes`, the
newest kept: `Interpreters.prune`) is a tmpfs of this size and this many files, where mounting
one is allowed: code inside cannot fill the host's disk through it."""


class SandboxUnavailable(Exception):
    """This host cannot run sandboxed code."""


class InterpreterEnded(SandboxUnavailable):
    """The container's interpreter ended before it said it was up (the sandbox could not start
    it: a runtime refused, a Python not there, its container's memory full): starting it again
    the same way ends the same."""

    def __init__(self, message: str, *, out_of_memory: bool) -> None:
        super().__init__(message)
        self.out_of_memory = out_of_memory


@dataclass(frozen=True)
class ContainerLimits:
    memory_bytes: int = 1024 * MiB
    disk_bytes: int = 1024 * MiB
    max_processes: int = 256
    cpus: float = 1.0
    output_bytes: int = 1 * MiB
    """What of each stream of a command is kept (what goes past is counted)."""
    file_bytes: int = 512 * MiB
    open_files: int = 1024
    allowed_domains: tuple[str, ...] = ()
    """The domains its `network_policy` allows (through its egress proxy); none: no network."""

    def command(self) -> ResourceLimits:
        """The rlimits of each process in the container (its memory is its cgroup's)."""
        return ResourceLimits(
            cpu_seconds=None,
            memory_bytes=None,
            wall_seconds=0,
            output_bytes=self.output_bytes,
            file_bytes=self.file_bytes,
            open_files=self.open_files,
        )


class ContainerHost:
    def __init__(
        self, root: Path, *, bwrap: str | None = None, cgroups: Cgroups | None = None, egress_allowlist: str = ""
    ) -> None:
        self.root = root
        self.egress_allowlist = egress_allowlist
        """`EGRESS_ALLOWLIST`: the private addresses a container's allowed domains may reach."""
        found = bwrap or bubblewrap.bwrap_path()
        if found is None:
            raise SandboxUnavailable("bubblewrap is not installed (Debian's package `bubblewrap`)")
        self.bwrap = found
        self.cgroups = cgroups
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)

    @classmethod
    def open(cls, root: Path, egress_allowlist: str = "") -> ContainerHost:
        """This host's containers under `root`, with a cgroup each where the host allows."""
        try:
            cgroups: Cgroups | None = Cgroups.open()
        except CgroupUnavailable as error:
            log.warning("containers run without cgroups (%s): their memory and processes are bounded by rlimits", error)
            cgroups = None
        return cls(root, cgroups=cgroups, egress_allowlist=egress_allowlist)

    def directory(self, container_id: str) -> Path:
        if not CONTAINER_ID.match(container_id):
            raise ValueError(f"not a container id: {container_id!r}")
        return self.root / container_id

    def exists(self, container_id: str) -> bool:
        return (self.directory(container_id) / "data").is_dir()

    def data(self, container_id: str) -> Path:
        return self.directory(container_id) / "data"

    async def prepare(self, container_id: str, limits: ContainerLimits) -> None:
        """Its directories (`data/` on a tmpfs of its disk quota), cgroup and `/etc`; again,
        nothing."""
        home = self.directory(container_id)
        for name in ("data", "control", "runs"):
            (home / name).mkdir(parents=True, exist_ok=True)
        if not os.path.ismount(home / "data"):
            await asyncio.to_thread(_mount_tmpfs, home / "data", limits.disk_bytes)
        if not os.path.ismount(home / "control"):
            await asyncio.to_thread(_mount_tmpfs, home / "control", CONTROL_BYTES, CONTROL_FILES)
        bubblewrap.write_etc(home / "etc")
        if self.cgroups is not None:
            self.cgroups.make(container_id, CgroupLimits(limits.memory_bytes, limits.max_processes, limits.cpus))
        if limits.allowed_domains:
            await self._egress_proxy(container_id, limits.allowed_domains)

    async def _egress_proxy(self, container_id: str, domains: tuple[str, ...]) -> None:
        """The container's egress proxy, started unless it runs (it outlives the worker)."""
        home = self.directory(container_id)
        (home / "egress").mkdir(exist_ok=True)
        socket_path = home / "egress" / "proxy.sock"
        if _proxy_alive(home / "egress-proxy.pid", socket_path):
            return
        process = await asyncio.create_subprocess_exec(
            *module_command("sandbox.egress_proxy", str(socket_path), ",".join(domains), self.egress_allowlist),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=(home / "egress-proxy.log").open("ab"),
            start_new_session=True,
        )
        (home / "egress-proxy.pid").write_text(str(process.pid))
        for _ in range(100):  # it listens within a moment
            if socket_path.exists():
                return
            await asyncio.sleep(0.02)

    def cgroup(self, container_id: str) -> Cgroup | None:
        return None if self.cgroups is None else self.cgroups.find(container_id)

    def _walls(self, container_id: str, limits: ContainerLimits, *, control: bool) -> bubblewrap.Walls:
        home = self.directory(container_id)
        egress = bool(limits.allowed_domains)
        return bubblewrap.Walls(
            data_dir=home / "data",
            etc_dir=home / "etc",
            control_dir=home / "control" if control else None,
            read_only=({str(INTERPRETER_PROGRAM): INTERPRETER_INSIDE} if control else {})
            | ({str(FORWARDER_PROGRAM): FORWARDER_INSIDE} if egress else {}),
            environment=({"OUTPUT_BYTES": str(limits.output_bytes)} if control else {})
            | (bubblewrap.PROXY_ENVIRONMENT if egress else {}),
            egress_dir=home / "egress" if egress else None,
        )

    def _command(self, limits: ContainerLimits, command: Sequence[str]) -> list[str]:
        """`command`, after the way out is open inside (when the container has one)."""
        if not limits.allowed_domains:
            return list(command)
        opening = f'{shlex.quote(sys.executable)} -I {FORWARDER_INSIDE} && exec "$@"'
        return ["/bin/sh", "-c", opening, "sh", *command]

    def _cgroup_paths(self, container_id: str) -> Sequence[str]:
        cgroup = self.cgroup(container_id)
        return [] if cgroup is None else [str(each) for each in cgroup.directories]

    def interpreters(self, container_id: str) -> Interpreters:
        home = self.directory(container_id)
        return Interpreters(home, home / "control")

    async def start_interpreter(self, container_id: str, limits: ContainerLimits) -> tuple[Interpreters, bool]:
        """The container's interpreter, started when none runs; whether an earlier one had
        ended (its Python state lost)."""
        interpreters = self.interpreters(container_id)
        if interpreters.alive():
            return interpreters, False
        lost = interpreters.current() is not None
        interpreters.reset_control()
        run = interpreters.next_run()
        argv = bubblewrap.argv(
            self.bwrap,
            self._walls(container_id, limits, control=True),
            self._command(limits, [sys.executable, "-I", INTERPRETER_INSIDE]),
        )
        await run.start(RunSpec(argv, limits.command(), None, self._cgroup_paths(container_id)))
        if not await interpreters.wait_ready(run):
            outcome = run.outcome()
            said = run.output("stderr", 2000).decode(errors="replace").strip() or str(outcome)
            if outcome is not None:
                raise InterpreterEnded(
                    f"the container's Python interpreter did not start: {said}", out_of_memory=outcome.out_of_memory
                )
            raise SandboxUnavailable(f"the container's Python interpreter was not up in time: {said}")
        return interpreters, lost

    def shell_run(self, container_id: str, call_id: str, index: int) -> Run:
        return Run(self.directory(container_id) / "runs" / f"{call_id}-{index}")

    async def start_shell(
        self, container_id: str, call_id: str, index: int, command: str, timeout_seconds: float, limits: ContainerLimits
    ) -> Run:
        """Run one shell command of a call (once: a run started before is not started again)."""
        run = self.shell_run(container_id, call_id, index)
        argv = bubblewrap.argv(
            self.bwrap,
            self._walls(container_id, limits, control=False),
            self._command(limits, ["/bin/bash", "-c", command]),
        )
        await run.start(RunSpec(argv, limits.command(), timeout_seconds, self._cgroup_paths(container_id)))
        return run

    def busy(self, container_id: str) -> bool:
        """Whether a command of it runs now (an expiry waits for it)."""
        home = self.directory(container_id)
        for run_dir in (home / "runs").glob("*"):
            run = Run(run_dir)
            if run.started and run.outcome() is None:
                return True
        return self.interpreters(container_id).waiting()

    def containers(self) -> list[str]:
        return sorted(path.name for path in self.root.iterdir() if CONTAINER_ID.match(path.name))

    async def remove(self, container_id: str) -> None:
        """Stop everything it runs, and remove it with its files."""
        home = self.directory(container_id)
        interpreters = self.interpreters(container_id)
        current = interpreters.current()
        if current is not None:
            current.kill()
        for run_dir in (home / "runs").glob("*"):
            Run(run_dir).kill()
        proxy = _read_pid(home / "egress-proxy.pid")
        if proxy is not None and _proxy_alive(home / "egress-proxy.pid", home / "egress" / "proxy.sock"):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proxy, signal.SIGKILL)
        cgroup = self.cgroup(container_id)
        if cgroup is not None:
            for _ in range(50):
                cgroup.kill()
                if not cgroup.pids():
                    break
                await asyncio.sleep(0.05)
            cgroup.remove()
        await asyncio.to_thread(_unmount_and_remove, home)


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _proxy_alive(pid_file: Path, socket_path: Path) -> bool:
    pid = _read_pid(pid_file)
    if pid is None:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"sandbox.egress_proxy" in cmdline and str(socket_path).encode() in cmdline


def _mount_tmpfs(where: Path, size: int, files: int | None = None) -> None:
    """A tmpfs of `size` bytes at `where` (a disk quota): where mounting is not allowed (not
    root, or no CAP_SYS_ADMIN), the container goes without one."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return
    inodes = f"nr_inodes={files}," if files is not None else ""
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},{inodes}mode=0700,nosuid,nodev", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        log.warning("a container's files have no disk quota (mounting a tmpfs failed: %s)", done.stderr.strip())


def _unmount_and_remove(home: Path) -> None:
    for mounted in (home / "data", home / "control"):
        if os.path.ismount(mounted):
            subprocess.run(["umount", "-l", str(mounted)], capture_output=True, check=False)
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(home)
