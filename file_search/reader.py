"""Reading a file into chunks in a process of its own (`file_search/reader_main.py`), confined by
`IngestionLimits.reader` (`sandbox/`): a file that would take the parser minutes of CPU, or
gigabytes of memory, or that finds a bug in it, costs that one file, never the server. The
worker's event loop only feeds the process the file's parts and takes its chunks, a batch at
a time; it never holds the file, nor its text, whole.

Whatever the outcome, it is one of: the chunks, in order; `UnreadableFileError` (the file is
refused, or its reading went past a limit or crashed: the same bytes would do the same again,
so it is never retried); `ReaderStoppedError` (the process was killed by something else, the
system's out-of-memory killer say: worth another try).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncGenerator, AsyncIterator

import orjson

from file_search.limits import LIMITS, IngestionLimits
from file_search.reader_main import job_argument
from models.chunks import Chunk
from models.errors import UnreadableFileError
from sandbox.own_modules import module_command
from sandbox.process import Ended, confined

log = logging.getLogger(__name__)

BATCH = 256
"""Chunks handed on together (one store write)."""


class ReaderStoppedError(Exception):
    """The reader's process was killed by something other than its own limits."""


async def read_chunks(
    filename: str,
    parts: AsyncIterator[bytes],
    max_tokens: int,
    overlap_tokens: int,
    limits: IngestionLimits = LIMITS,
) -> AsyncGenerator[list[Chunk], None]:
    """The file's chunks, in batches of up to `BATCH`, in order. Close the iterator (or leave
    `contextlib.aclosing`) to stop early: the process is killed."""
    argv = module_command("file_search.reader_main", job_argument(filename, max_tokens, overlap_tokens, limits))
    made: int | None = None
    batch: list[Chunk] = []
    async with confined(argv, limits.reader) as process:
        feeding = asyncio.create_task(process.feed(parts))
        try:
            async for line in process.lines():
                item = orjson.loads(line)
                if isinstance(item, list):
                    batch.append(Chunk(str(item[0]), int(item[1])))
                    if len(batch) >= BATCH:
                        yield batch
                        batch = []
                elif "refused" in item:
                    raise UnreadableFileError(str(item["message"]), code=str(item["refused"]))
                else:
                    made = int(item["chunks"])
        finally:
            if not feeding.done():
                feeding.cancel()
            fed = (await asyncio.gather(feeding, return_exceptions=True))[0]
    if isinstance(fed, Exception):  # the file's parts could not be read (the store went away)
        raise fed
    if made is None:
        raise _failure(filename, process.ended, limits)
    if batch:
        yield batch


def _failure(filename: str, ended: Ended, limits: IngestionLimits) -> Exception:
    reader = limits.reader
    if ended.stderr_tail:
        log.warning(
            "the reader of %r ended without its chunks: %s", filename, ended.stderr_tail.decode(errors="replace")
        )
    if ended.out_of_time:
        return UnreadableFileError(
            f"reading {filename!r} took longer than the {reader.wall_seconds:g} s a file's reader may take",
            code="invalid_file",
        )
    if ended.signal == signal.SIGXCPU:
        return UnreadableFileError(
            f"reading {filename!r} took more than the {reader.cpu_seconds} s of CPU a file's reader may use",
            code="invalid_file",
        )
    if ended.too_much_output:
        return UnreadableFileError(
            f"{filename!r} made more text than a file's reader may hand on ({reader.output_bytes} bytes)",
            code="invalid_file",
        )
    if ended.signal == signal.SIGKILL:
        return ReaderStoppedError(f"the reader of {filename!r} was killed (SIGKILL), not by its own limits")
    how = f"signal {ended.signal}" if ended.signal is not None else f"exit status {ended.exit_code}"
    return UnreadableFileError(f"the reader of {filename!r} failed ({how})", code="invalid_file")
