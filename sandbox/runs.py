"""A sandboxed command as files on the host, so that it runs once and outlives its worker.

A run is a directory: `run.json` (what to run, written once: the first `start` makes it and
spawns the launcher, `sandbox/launcher.py`; any later `start` finds it and starts nothing),
`launcher.pid` and `child.pid` (each a pid with its start time: `sandbox/pids.py`), and at the
end `status.json`; its `stdout` and `stderr` (growing as the command writes) are kept in an
output directory of their own, on the container's quota, where old runs' are pruned. A worker
that dies leaves all of it, and the command running; the retried activity calls `start` again
(nothing happens), follows the output from where it had got to, and reads the status once it
is there.

A run whose launcher is gone without a status (the host restarted, someone killed it) ended
in a way nobody knows: `RunOutcome.lost`.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox import pids
from sandbox.files import read_from
from sandbox.own_modules import module_command
from sandbox.run_spec import RunSpec

POLL_SECONDS = 0.05
STREAMS = ("stdout", "stderr")
LAUNCHER_MARK = b"sandbox.launcher"
CHILD_MARK = b"bwrap"


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    out_of_memory: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    seconds: float = 0.0
    lost: bool = False
    """It ended without saying how (its launcher is gone)."""
    launcher_error: str | None = None

    @classmethod
    def of(cls, said: dict[str, Any]) -> RunOutcome:
        known = {key: value for key, value in said.items() if key in cls.__dataclass_fields__}
        return cls(**known)


class Run:
    def __init__(self, directory: Path, output: Path | None = None) -> None:
        self.directory = directory
        self.output_directory = output or directory
        """Where its `stdout` and `stderr` are kept (pruned once it has ended)."""

    @property
    def started(self) -> bool:
        return (self.directory / "run.json").exists()

    @property
    def output_kept(self) -> bool:
        """Whether its output is still kept (a run that ended long ago may have been pruned)."""
        return self.output_directory.is_dir()

    async def start(self, spec: RunSpec) -> bool:
        """Start the command unless this run was started before; whether this call started it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self.directory / "run.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as file:
            file.write(json.dumps(spec.to_json()))
        self.output_directory.mkdir(parents=True, exist_ok=True)
        launcher = await asyncio.create_subprocess_exec(
            *module_command("sandbox.launcher", str(self.directory), str(self.output_directory)),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        await launcher.wait()  # it forks and leaves at once; the command goes on in its child
        return True

    def outcome(self) -> RunOutcome | None:
        """How it ended, once it has; `lost` when its launcher is gone without saying."""
        status = self.directory / "status.json"
        if status.exists():
            return RunOutcome.of(json.loads(status.read_text()))
        if self.started and not self._launcher_alive():
            if status.exists():  # it wrote the status as it went
                return RunOutcome.of(json.loads(status.read_text()))
            return RunOutcome(lost=True)
        return None

    def _launcher_alive(self) -> bool:
        path = self.directory / "launcher.pid"
        if not path.exists():
            return (self.directory / "run.json").exists() and _young(self.directory / "run.json")
        return pids.alive(pids.read(path), self._launcher_mark())

    def _launcher_mark(self) -> bytes:
        return LAUNCHER_MARK + b"\0" + str(self.directory).encode() + b"\0"

    async def follow(self, offsets: dict[str, int]) -> AsyncIterator[tuple[str, bytes]]:
        """Each stream's new output from `offsets` on (moved on as it goes), as it comes, until
        the run has ended and all it kept has been read."""
        while True:
            ended = self.outcome()
            for stream in STREAMS:
                data = read_from(self.output_directory / stream, offsets.get(stream, 0))
                if data:
                    offsets[stream] = offsets.get(stream, 0) + len(data)
                    yield stream, data
            if ended is not None:
                return
            await asyncio.sleep(POLL_SECONDS)

    def output(self, stream: str, limit: int) -> bytes:
        """The first `limit` bytes the run kept of a stream."""
        return read_from(self.output_directory / stream, 0, limit)

    def kill(self) -> None:
        """End the command (and its sandbox's PID namespace), if it runs: its bwrap, then its
        launcher, each only if the recorded process is still the one the run started."""
        if not self._launcher_alive():
            return  # ended: whatever its pids name now is not its
        pids.send(pids.read(self.directory / "child.pid"), CHILD_MARK)
        pids.send(pids.read(self.directory / "launcher.pid"), self._launcher_mark())


def _young(path: Path, seconds: float = 10.0) -> bool:
    """Made so recently that its launcher may not have said its pid yet."""
    try:
        return time.time() - path.stat().st_mtime < seconds
    except OSError:
        return False
