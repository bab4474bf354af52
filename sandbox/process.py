"""Running a confined process: fed its input, read a line at a time, stopped at its limits.

The process runs in a session of its own, so a stop kills everything it started. It is
stopped (SIGKILL to its process group) when its wall-clock time is up, when it writes more
than its output allows, or when the reader leaves early; how it ended says which
(`Ended`). Its standard error is kept, the last `STDERR_TAIL_BYTES` of it, for the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field

from sandbox.limits import ResourceLimits

STDERR_TAIL_BYTES = 4096
MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass
class Ended:
    """How a confined process ended."""

    exit_code: int | None = None
    """Its exit status, or None when a signal ended it."""
    signal: int | None = None
    out_of_time: bool = False
    """Its wall-clock time ran out (or SIGXCPU/SIGKILL for its CPU time)."""
    too_much_output: bool = False
    stderr_tail: bytes = b""

    @property
    def succeeded(self) -> bool:
        return self.exit_code == 0 and not self.too_much_output

    @property
    def cpu_exhausted(self) -> bool:
        return self.signal in (signal.SIGXCPU, signal.SIGKILL) and not self.out_of_time


@dataclass
class ConfinedProcess:
    process: asyncio.subprocess.Process
    limits: ResourceLimits
    deadline: float
    ended: Ended = field(default_factory=Ended)
    at_end: bool = False
    """Its output was read to the end."""
    _read: int = 0
    _stderr: bytearray = field(default_factory=bytearray)

    async def feed(self, pieces: AsyncIterator[bytes]) -> None:
        """Write `pieces` to its standard input, then close it (a process that stops reading
        early is not an error here: how it ended says what happened)."""
        stdin = self.process.stdin
        assert stdin is not None
        try:
            async for piece in pieces:
                stdin.write(piece)
                await stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            stdin.close()

    async def lines(self) -> AsyncIterator[bytes]:
        """Its output, a line at a time, until it closes it or a limit stops it."""
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self._stop(out_of_time=True)
                return
            try:
                async with asyncio.timeout(remaining):
                    line = await stdout.readline()
            except TimeoutError:
                self._stop(out_of_time=True)
                return
            except ValueError:  # a line longer than MAX_LINE_BYTES
                self._stop(too_much_output=True)
                return
            if not line:
                self.at_end = True
                return
            self._read += len(line)
            if self._read > self.limits.output_bytes:
                self._stop(too_much_output=True)
                return
            yield line

    async def _keep_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        while piece := await stderr.read(65536):
            self._stderr += piece
            del self._stderr[:-STDERR_TAIL_BYTES]

    def _stop(self, *, out_of_time: bool = False, too_much_output: bool = False) -> None:
        self.ended.out_of_time |= out_of_time
        self.ended.too_much_output |= too_much_output
        if self.process.returncode is None:  # once reaped, its id may be another's
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)


@contextlib.asynccontextmanager
async def confined(
    argv: Sequence[str], limits: ResourceLimits, *, env: Mapping[str, str] | None = None
) -> AsyncIterator[ConfinedProcess]:
    """Start `argv` (which applies `limits` to itself: `ResourceLimits.apply`); on leaving,
    anything of it still running is killed and reaped, and `ended` says how it ended."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env=dict(env) if env is not None else None,
        limit=MAX_LINE_BYTES,
    )
    running = ConfinedProcess(process, limits, time.monotonic() + limits.wall_seconds)
    keeping = asyncio.create_task(running._keep_stderr())
    try:
        yield running
    except BaseException:
        running._stop()  # whoever ran it failed or was cancelled: it stops with them
        raise
    finally:
        if process.returncode is None and not running.at_end:
            running._stop()  # the reader left before the end: nothing more is wanted of it
        try:
            async with asyncio.timeout(max(0.1, running.deadline - time.monotonic())):
                await asyncio.shield(process.wait())
        except TimeoutError:
            running._stop(out_of_time=True)
            await asyncio.shield(process.wait())
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(keeping, 1.0)
        code = process.returncode
        running.ended.exit_code = code if code is not None and code >= 0 else None
        running.ended.signal = -code if code is not None and code < 0 else None
        running.ended.stderr_tail = bytes(running._stderr)
