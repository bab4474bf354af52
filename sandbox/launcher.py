"""The process that runs one sandboxed command and outlives the worker that asked for it.

    python -m sandbox.launcher RUN_DIR

It reads what to run from `RUN_DIR/run.json` (`sandbox/runs.py` writes it), leaves its
parent at once (the worker reaps a process that has ended; the launcher itself carries on
alone, in its own session, so a worker killed with SIGKILL leaves it running), and then:

- starts the command, which joins the container's cgroup and takes on its rlimits before it
  starts the sandbox;
- copies its standard output and error into `stdout` and `stderr` as they come, each up to
  `output_bytes` (what goes past is counted, not kept), so a retried activity can read
  them from where it was;
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

from sandbox.files import write_atomically
from sandbox.limits import ResourceLimits

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
        self.file: IO[bytes] = path.open("ab")
        self.limit = limit
        self.seen = 0

    def take(self, data: bytes) -> None:
        room = self.limit - self.seen
        if room > 0:
            self.file.write(data[:room])
            self.file.flush()
        self.seen += len(data)


def run(directory: Path) -> dict[str, Any]:
    spec = json.loads((directory / "run.json").read_text())
    limits = ResourceLimits(**spec["limits"])
    cgroup: list[str] = spec.get("cgroup") or []
    timeout: float | None = spec.get("timeout_seconds")

    def enter() -> None:  # in the child, before it becomes the sandbox: the launcher has no threads
        for where in cgroup:
            Path(where, "cgroup.procs").write_text(str(os.getpid()))
        limits.apply()

    oom_before = _oom_kills(cgroup)
    began = time.monotonic()
    child = subprocess.Popen(
        spec["argv"],
        # bwrap's own process is the sandbox's PID 1, whose environment is readable inside
        # (`/proc/1/environ`): it starts from none of the worker's.
        env={"PATH": "/usr/bin:/bin"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=enter,  # noqa: PLW1509 - the launcher is single-threaded
        close_fds=True,
    )
    write_atomically(directory / "child.pid", str(child.pid))
    streams = {
        "stdout": _Capped(directory / "stdout", limits.output_bytes),
        "stderr": _Capped(directory / "stderr", limits.output_bytes),
    }
    selector = selectors.DefaultSelector()
    assert child.stdout is not None and child.stderr is not None
    selector.register(child.stdout, selectors.EVENT_READ, "stdout")
    selector.register(child.stderr, selectors.EVENT_READ, "stderr")
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
    directory = Path(sys.argv[1])
    if os.fork():  # the worker reaps this one at once; the launcher goes on without it
        os._exit(0)
    os.setsid()
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    write_atomically(directory / "launcher.pid", str(os.getpid()))
    try:
        run(directory)
    except Exception as error:  # noqa: BLE001 - said in the status, for the worker to read
        write_atomically(directory / "status.json", json.dumps({"launcher_error": f"{type(error).__name__}: {error}"}))
    os._exit(0)


if __name__ == "__main__":
    main()
