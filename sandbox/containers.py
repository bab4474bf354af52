"""The containers of this host: for each, a directory, a uid of its own (when the worker is
root), a tree of cgroups (its memory, processes and CPU), its interpreter, and its shell
commands' runs. Everything is on disk and in the kernel, nothing in the worker's memory: a
worker that starts again finds its host's containers as they were, and their commands still
running.

    <root>/<container id>/
        identity                the uid and gid its code runs as (`sandbox/identity.py`)
        data/                   /mnt/data: the container's files, on a tmpfs of its disk
                                quota (`disk_bytes`) owned by its uid, where mounting one is
                                allowed
        control/                /mnt/control: the interpreter's requests and answers (each
                                call's output kept up to `output_bytes`), on a tmpfs of
                                `CONTROL_BYTES` owned by its uid
        outputs/                each run's stdout and stderr, on a tmpfs of `OUTPUT_BYTES`
                                (the oldest runs' pruned): out of the sandbox's reach
        etc/                    the passwd and group the sandbox sees
        interpreter-<n>/        each interpreter's run (`sandbox/runs.py`)
        runs/<call id>-<n>/     each shell command's run

`SandboxUnavailable` says why this host cannot run sandboxes (no `bwrap`; no libseccomp; a
root worker on a kernel that lets no unprivileged user make a user namespace, where bwrap
would have to run as root: it never does); without a writable cgroup hierarchy, or the right
to mount, containers run with rlimits and no disk quota, and the start-up line says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sandbox import bubblewrap, pids, reach, seccomp
from sandbox.cgroups import Cgroup, CgroupLimits, Cgroups, CgroupUnavailable, ContainerCgroup
from sandbox.egress_rules import SandboxEgress
from sandbox.identity import DEFAULT_UIDS, Identities, Identity, UidRange
from sandbox.interpreter import Interpreters
from sandbox.limits import ResourceLimits
from sandbox.own_modules import module_command
from sandbox.probe import refusal
from sandbox.run_spec import RunSpec
from sandbox.runs import Run

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
OUTPUT_BYTES = 64 * MiB
KEPT_RUN_OUTPUTS = 16
"""The runs whose output is kept (the newest; a run still going is always kept): each run's
streams are up to `output_bytes` each, so a container's outputs stay within `OUTPUT_BYTES`."""
PROXY_MARK = b"sandbox.egress_proxy"


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
        self,
        root: Path,
        *,
        bwrap: str | None = None,
        cgroups: Cgroups | None = None,
        egress: SandboxEgress | None = None,
        uids: UidRange | None = None,
    ) -> None:
        self.root = root
        self.egress = egress or SandboxEgress()
        """Where a container's allowed domains may be reached (`SANDBOX_EGRESS_ALLOWLIST`, and
        this deployment's own services closed)."""
        found = bwrap or bubblewrap.bwrap_path()
        if found is None:
            raise SandboxUnavailable("bubblewrap is not installed (Debian's package `bubblewrap`)")
        self.bwrap = found
        self.cgroups = cgroups
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        try:
            self.seccomp = seccomp.write(self.root)
        except seccomp.SeccompUnavailable as error:
            raise SandboxUnavailable(str(error)) from None
        self.identities = Identities(self.root, uids or UidRange.parse(DEFAULT_UIDS)) if os.geteuid() == 0 else None
        """Each container's own uid, when this worker is root (else bwrap runs as this worker)."""

    @classmethod
    def open(cls, root: Path, egress: SandboxEgress | None = None, uids: UidRange | None = None) -> ContainerHost:
        """This host's containers under `root`, with a cgroup each where the host allows, once
        a sandbox was seen to start here as it will (`SandboxUnavailable` says why not)."""
        try:
            cgroups: Cgroups | None = Cgroups.open(scope_of(root))
        except CgroupUnavailable as error:
            log.warning("containers run without cgroups (%s): their memory and processes are bounded by rlimits", error)
            cgroups = None
        host = cls(root, cgroups=cgroups, egress=egress, uids=uids)
        host.probe()
        return host

    def probe(self) -> None:
        """`SandboxUnavailable` unless a sandbox starts here as a container's will
        (`sandbox/probe.py`)."""
        why = refusal(self.bwrap, None if self.identities is None else self.identities.uids.first)
        if why is not None:
            raise SandboxUnavailable(f"{why}; code never runs as root instead")

    def directory(self, container_id: str) -> Path:
        if not CONTAINER_ID.match(container_id):
            raise ValueError(f"not a container id: {container_id!r}")
        return self.root / container_id

    def exists(self, container_id: str) -> bool:
        return (self.directory(container_id) / "data").is_dir()

    def data(self, container_id: str) -> Path:
        return self.directory(container_id) / "data"

    def identity(self, container_id: str) -> Identity | None:
        """Whom the container's code runs as (None: as this worker, which is not root)."""
        return Identities.of(self.directory(container_id))

    async def prepare(self, container_id: str, limits: ContainerLimits) -> None:
        """Its uid, directories (`data/`, `control/` and `outputs/` on tmpfs quotas owned by its
        uid), cgroups and `/etc`; again, nothing. A container made before it had a uid of its
        own is migrated: everything it runs is killed (it ran as root), its files given to it."""
        home = self.directory(container_id)
        made_before = self.identities is not None and (home / "data").is_dir() and Identities.of(home) is None
        if made_before:
            await self._stop_everything(container_id)
        for name in ("data", "control", "runs", "outputs"):
            (home / name).mkdir(parents=True, exist_ok=True)
        identity = None if self.identities is None else self.identities.claim(container_id, home)
        owner = "" if identity is None else f"uid={identity.uid},gid={identity.gid},"
        for name, size, files in (("data", limits.disk_bytes, None), ("control", CONTROL_BYTES, CONTROL_FILES)):
            if not os.path.ismount(home / name):
                await asyncio.to_thread(_mount_tmpfs, home / name, size, files, owner)
            elif made_before:
                await asyncio.to_thread(_remount_for, home / name, owner)
        if not os.path.ismount(home / "outputs"):
            await asyncio.to_thread(_mount_tmpfs, home / "outputs", OUTPUT_BYTES, CONTROL_FILES, "")
        if identity is not None:
            await asyncio.to_thread(_give, home / "data", identity, whole=made_before)
            await asyncio.to_thread(_give, home / "control", identity, whole=made_before)
        bubblewrap.write_etc(home / "etc")
        if self.cgroups is not None:
            self.cgroups.make(container_id, CgroupLimits(limits.memory_bytes, limits.max_processes, limits.cpus))
        if limits.allowed_domains:
            await self._egress_proxy(container_id, limits.allowed_domains)

    async def _egress_proxy(self, container_id: str, domains: tuple[str, ...]) -> None:
        """The container's egress proxy, started unless it runs (it outlives the worker), in the
        container's `service` cgroup."""
        home = self.directory(container_id)
        (home / "egress").mkdir(exist_ok=True)
        if not os.path.ismount(home / "egress"):  # a filesystem of its own: its host path shows nowhere inside
            await asyncio.to_thread(_mount_tmpfs, home / "egress", 64 * 1024, 16, "", mode="0755")
        socket_path = home / "egress" / "proxy.sock"
        if self._proxy_alive(container_id):
            return
        cgroup = self.cgroup(container_id)
        service = cgroup.service if cgroup is not None else None
        process = await asyncio.create_subprocess_exec(
            *module_command(
                "sandbox.egress_proxy",
                str(socket_path),
                ",".join(domains),
                self.egress.to_json(),
                str(home / "egress-proxy.log"),
            ),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        if service is not None:
            with contextlib.suppress(OSError):
                service.join(process.pid)
        pids.write(home / "egress-proxy.pid", process.pid)
        for _ in range(100):  # it listens within a moment
            if socket_path.exists():
                return
            await asyncio.sleep(0.02)

    def _proxy_alive(self, container_id: str) -> bool:
        home = self.directory(container_id)
        return pids.alive(pids.read(home / "egress-proxy.pid"), self._proxy_mark(container_id))

    def _proxy_mark(self, container_id: str) -> bytes:
        return PROXY_MARK + b"\0" + str(self.directory(container_id) / "egress" / "proxy.sock").encode() + b"\0"

    def cgroup(self, container_id: str) -> ContainerCgroup | None:
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

    def _spec(
        self,
        container_id: str,
        limits: ContainerLimits,
        walls: bubblewrap.Walls,
        command: Sequence[str],
        part: str,
        timeout_seconds: float | None = None,
    ) -> RunSpec:
        cgroup = self.cgroup(container_id)
        joined: Cgroup | None = None if cgroup is None else getattr(cgroup, part)
        return RunSpec(
            bwrap=self.bwrap,
            launch=bubblewrap.launch(walls, self._command(limits, command)),
            limits=limits.command(),
            timeout_seconds=timeout_seconds,
            cgroup=[] if joined is None else [str(each) for each in _members(joined)],
            service_cgroup=[] if cgroup is None else [str(each) for each in _members(cgroup.service)],
            identity=self.identity(container_id),
            seccomp=str(self.seccomp),
        )

    def interpreters(self, container_id: str) -> Interpreters:
        home = self.directory(container_id)
        return Interpreters(home, home / "control", self.identity(container_id))

    async def start_interpreter(self, container_id: str, limits: ContainerLimits) -> tuple[Interpreters, bool]:
        """The container's interpreter, started when none runs; whether an earlier one had
        ended (its Python state lost)."""
        interpreters = self.interpreters(container_id)
        if interpreters.alive():
            return interpreters, False
        lost = interpreters.current() is not None
        interpreters.reset_control()
        run = interpreters.next_run()
        self.prune_outputs(container_id)
        spec = self._spec(
            container_id,
            limits,
            self._walls(container_id, limits, control=True),
            [sys.executable, "-I", INTERPRETER_INSIDE],
            "interpreter",
        )
        await run.start(spec)
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
        home = self.directory(container_id)
        return Run(home / "runs" / f"{call_id}-{index}", home / "outputs" / f"{call_id}-{index}")

    async def start_shell(
        self, container_id: str, call_id: str, index: int, command: str, timeout_seconds: float, limits: ContainerLimits
    ) -> Run:
        """Run one shell command of a call (once: a run started before is not started again)."""
        run = self.shell_run(container_id, call_id, index)
        if not run.started:
            self.prune_outputs(container_id)
        spec = self._spec(
            container_id,
            limits,
            self._walls(container_id, limits, control=False),
            ["/bin/bash", "-c", command],
            "commands",
            timeout_seconds,
        )
        await run.start(spec)
        return run

    def prune_outputs(self, container_id: str, keep: int = KEPT_RUN_OUTPUTS) -> None:
        """Drop the output of all but the newest `keep` runs that have ended (a run that goes
        on keeps its own); a retried activity whose run's output went says so."""
        home = self.directory(container_id)
        outputs = home / "outputs"
        with contextlib.suppress(OSError):
            kept = sorted(outputs.iterdir(), key=lambda path: path.stat().st_mtime_ns)
            for output in kept[: max(0, len(kept) - keep)]:
                run_dir = home / "runs" / output.name
                if not run_dir.is_dir():
                    run_dir = home / output.name  # an interpreter's
                if Run(run_dir, output).outcome() is not None:
                    shutil.rmtree(output, ignore_errors=True)

    def freeze_interpreter(self, container_id: str) -> None:
        """Stop everything the interpreter runs until its next call (`thaw_interpreter`): a
        call's code lives as long as the call, whatever threads or processes it left behind."""
        cgroup = self.cgroup(container_id)
        if cgroup is not None and not self.interpreters(container_id).waiting():
            cgroup.interpreter.freeze()

    def thaw_interpreter(self, container_id: str) -> None:
        cgroup = self.cgroup(container_id)
        if cgroup is not None:
            cgroup.interpreter.thaw()

    def interpreter_frozen(self, container_id: str) -> bool:
        cgroup = self.cgroup(container_id)
        return cgroup is not None and cgroup.interpreter.frozen()

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

    def sweep_cgroups(self) -> None:
        """Remove the cgroups of containers no longer here (a removal whose `rmdir` found a
        process not yet reaped leaves its tree: it goes now)."""
        if self.cgroups is None:
            return
        here = set(self.containers())
        for name in self.cgroups.names():
            if CONTAINER_ID.match(name) and name not in here:
                found = self.cgroups.find(name)
                if found is not None:
                    found.top.remove()

    async def _stop_everything(self, container_id: str) -> None:
        """Kill every process of the container: by its cgroups, where there are some (the
        kernel's own list), and each run and the proxy by its record (only if it is still the
        process recorded)."""
        home = self.directory(container_id)
        current = self.interpreters(container_id).current()
        if current is not None:
            current.kill()
        for run_dir in (home / "runs").glob("*"):
            Run(run_dir).kill()
        pids.send(pids.read(home / "egress-proxy.pid"), self._proxy_mark(container_id))
        cgroup = self.cgroup(container_id)
        if cgroup is not None:
            await asyncio.to_thread(cgroup.top.kill)

    async def remove(self, container_id: str) -> None:
        """Stop everything it runs, and remove it with its files; its uid is free again."""
        home = self.directory(container_id)
        identity = Identities.of(home)
        await self._stop_everything(container_id)
        cgroup = self.cgroup(container_id)
        if cgroup is not None:
            await asyncio.to_thread(cgroup.top.remove)
        await asyncio.to_thread(_unmount_and_remove, home)
        if self.identities is not None and identity is not None:
            self.identities.release(container_id, identity)


def scope_of(root: Path) -> str:
    """The name of a host's own cgroup: one a `SANDBOX_DIR`."""
    return hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]


def _members(cgroup: Cgroup) -> list[Path]:
    """The directories a process writes its pid into to join `cgroup` (its freezer's too)."""
    directories = list(cgroup.directories)
    if cgroup.freezer is not None and cgroup.freezer not in directories:
        directories.append(cgroup.freezer)
    return directories


def _mount_tmpfs(where: Path, size: int, files: int | None, owner: str, *, mode: str = "0700") -> None:
    """A tmpfs of `size` bytes at `where` (a disk quota), its root owned by `owner`
    (`uid=...,gid=...,`): where mounting is not allowed (not root, or no CAP_SYS_ADMIN), the
    container goes without one."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return
    inodes = f"nr_inodes={files}," if files is not None else ""
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},{inodes}{owner}mode={mode},nosuid,nodev", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        log.warning("a container's files have no disk quota (mounting a tmpfs failed: %s)", done.stderr.strip())


def _remount_for(where: Path, owner: str) -> None:
    """A tmpfs mounted before its container had a uid, its root given to the uid."""
    if owner:
        subprocess.run(["mount", "-o", f"remount,{owner.rstrip(',')}", str(where)], capture_output=True, check=False)


def _give(directory: Path, identity: Identity, *, whole: bool) -> None:
    """`directory` owned by `identity` (and, `whole`, everything under it: a container made
    before it had a uid), following no link."""
    os.chown(directory, identity.uid, identity.gid, follow_symlinks=False)
    os.chmod(directory, 0o700)
    if not whole:
        return
    for relative, _ in reach.walk(directory):
        with contextlib.suppress(OSError, ValueError):
            reach.give(directory, relative, identity)


def _unmount_and_remove(home: Path) -> None:
    for mounted in (home / "data", home / "control", home / "outputs", home / "egress"):
        if os.path.ismount(mounted):
            subprocess.run(["umount", "-l", str(mounted)], capture_output=True, check=False)
    reach.remove_tree(home)
