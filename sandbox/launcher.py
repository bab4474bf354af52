"""The process that runs one sandboxed command and outlives the worker that asked for it.

    python -m sandbox.launcher RUN_DIR OUTPUT_DIR

It reads what to run from `RUN_DIR/run.json` (`sandbox/runs.py` writes it), leaves its
parent at once (the worker reaps a process that has ended; the launcher itself carries on
alone, in its own session, so a worker killed with SIGKILL leaves it running), joins its
container's `service` cgroup (counted against the container, out of reach of its code's OOM),
and then:

- starts bwrap, its options handed over through a descriptor (`--args`), with the seccomp
  filter through another; the child joins the container's cgroup and takes on its rlimits
  before it starts the sandbox, and, when the launcher is root, binds what the sandbox sees
  where the container's uid can reach it and becomes that uid (`sandbox/staging.py`): bwrap
  never runs as root;
- copies its standard output and error into `OUTPUT_DIR/stdout` and `stderr` as they come,
  each up to `output_bytes` (what goes past is counted, not kept; a full output disk keeps
  nothing more), so a retried activity can read them from where it was;
- kills it when its time is up (the sandbox's PID namespace ends with it, whatever it
  started);
- writes how it ended into `status.json`, once, atomically: whoever reads the file reads it
  whole or not at all.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

from sandbox import pids, staging
from sandbox.files import write_atomically
from sandbox.run_spec import RunSpec

READ_BYTES = 65536
TIMEOUT_GRACE_SECONDS = 2.0


def _oom_kills(cgroup: list[str]) -> int:
    for directory in cgroup:
        for name in ("memory.events", "memory.oom_control"):
            try:
                for line in Path(directory, name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
            except OSError:
                continue
    return 0


class _Capped:
    """One output stream's file, kept up to `limit` bytes; the rest only counted."""

    def __init__(self, path: Path, limit: int) -> None:
        self.file: IO[bytes] | None = path.open("ab")
        self.limit = limit
        self.seen = 0

    def take(self, data: bytes) -> None:
        room = self.limit - self.seen
        if room > 0 and self.file is not None:
            try:
                self.file.write(data[:room])
                self.file.flush()
            except OSError:  # the output disk is full: the rest is counted, not kept
                self.file = None
        self.seen += len(data)


def _join(cgroup: list[str], pid: int) -> None:
    for where in cgroup:
        Path(where, "cgroup.procs").write_text(str(pid))


def _handed(data: bytes) -> int:
    """A descriptor holding `data`, from its start, for the child to read."""
    fd = os.memfd_create("bwrap")  # close-on-exec: `pass_fds` hands it to bwrap alone
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def run(directory: Path, output: Path) -> dict[str, Any]:
    spec = RunSpec.from_json(json.loads((directory / "run.json").read_text()))
    limits = spec.limits
    cgroup = list(spec.cgroup)
    identity = spec.identity
    sources = spec.launch.sources()

    handed = [os.open(source, os.O_RDONLY) for source in spec.launch.copies()]
    options = spec.launch.options(staged_binds=identity is not None, copied=handed)
    if spec.seccomp is not None:
        handed.append(os.open(spec.seccomp, os.O_RDONLY))
        options += ["--seccomp", str(handed[-1])]
    handed.append(_handed(b"".join(option.encode() + b"\0" for option in options)))
    argv = [spec.bwrap, "--args", str(handed[-1]), "--", *spec.launch.command]

    def enter() -> None:  # in the child, before it becomes the sandbox: the launcher has no threads
        _join(cgroup, os.getpid())
        limits.apply()
        if identity is not None:
            staging.stage(sources)
            staging.become(identity)

    oom_before = _oom_kills(cgroup)
    began = time.monotonic()
    child = subprocess.Popen(
        argv,
        # bwrap's own process is the sandbox's PID 1, whose environment is readable inside
        # (`/proc/1/environ`): it starts from none of the worker's.
        env={"PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=enter,  # noqa: PLW1509 - the launcher is single-threaded
        close_fds=True,
        pass_fds=handed,
    )
    for fd in handed:
        os.close(fd)
    pids.write(directory / "child.pid", child.pid)
    streams = {
        "stdout": _Capped(output / "stdout", limits.output_bytes),
        "stderr": _Capped(output / "stderr", limits.output_bytes),
    }
    selector = selectors.DefaultSelector()
    assert child.stdout is not None and child.stderr is not None
    selector.register(child.stdout, selectors.EVENT_READ, "stdout")
    selector.register(child.stderr, selectors.EVENT_READ, "stderr")
    timeout = spec.timeout_seconds
    timed_out = False
    open_streams = 2
    while open_streams:
        wait = None if timeout is None else max(0.0, timeout - (time.monotonic() - began))
        if wait == 0.0 and not timed_out:
            timed_out = True
            child.kill()  # bwrap: the sandbox's PID namespace, and everything in it, ends with it
            wait = TIMEOUT_GRACE_SECONDS
        ready = selector.select(wait)
        if not ready and timed_out:
            break
        for key, _ in ready:
            data = os.read(key.fileobj.fileno(), READ_BYTES)  # type: ignore[union-attr]
            if not data:
                selector.unregister(key.fileobj)
                open_streams -= 1
                continue
            streams[key.data].take(data)
    code = child.wait()
    status = {
        "exit_code": code if code >= 0 else None,
        "signal": -code if code < 0 else None,
        "timed_out": timed_out,
        "out_of_memory": _oom_kills(cgroup) > oom_before,
        "stdout_bytes": streams["stdout"].seen,
        "stderr_bytes": streams["stderr"].seen,
        "seconds": round(time.monotonic() - began, 3),
    }
    write_atomically(directory / "status.json", json.dumps(status))
    return status


def main() -> None:
    directory, output = Path(sys.argv[1]), Path(sys.argv[2])
    if os.fork():  # the worker reaps this one at once; the launcher goes on without it
        os._exit(0)
    os.setsid()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    pids.write(directory / "launcher.pid", os.getpid())
    try:
        _join(json.loads((directory / "run.json").read_text()).get("service_cgroup") or [], os.getpid())
        run(directory, output)
    except Exception as error:  # noqa: BLE001 - said in the status, for the worker to read
        write_atomically(directory / "status.json", json.dumps({"launcher_error": f"{type(error).__name__}: {error}"}))
    os._exit(0)


if __name__ == "__main__":
    main()
