"""The reader's process: one file's bytes in on standard input, its chunks out on standard
output, a JSON line each (`[text, tokens]`), then `{"chunks": n}`; or one line
`{"refused": code, "message": ...}` when the file cannot be searched. It takes on its
limits (`IngestionLimits.reader`) before it reads a byte, and checks every other limit
(text, depth, chunks) before it writes one chunk. Run by `file_search/reader.py`.

    python -m file_search.reader_main '{"filename": ..., "max_tokens": ..., "overlap_tokens": ..., "limits": ...}'
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

import orjson

from file_search.chunking import TooManyChunksError, chunks_of
from file_search.limits import IngestionLimits
from file_search.parsing import text_of
from models.chunks import Chunk
from models.errors import UnreadableFileError
from sandbox.limits import ResourceLimits


def job_argument(filename: str, max_tokens: int, overlap_tokens: int, limits: IngestionLimits) -> str:
    return json.dumps(
        {"filename": filename, "max_tokens": max_tokens, "overlap_tokens": overlap_tokens, "limits": asdict(limits)}
    )


def _limits(given: dict[str, Any]) -> IngestionLimits:
    return IngestionLimits(**(given | {"reader": ResourceLimits(**given["reader"])}))


def _refuse(code: str, message: str) -> None:
    sys.stdout.write(json.dumps({"refused": code, "message": message}) + "\n")
    sys.stdout.flush()


def _chunks(filename: str, max_tokens: int, overlap_tokens: int, limits: IngestionLimits) -> list[Chunk]:
    content = sys.stdin.buffer.read(limits.max_file_bytes + 1)
    text = text_of(filename, content, limits)
    del content
    return chunks_of(text, max_tokens, overlap_tokens, max_chunks=limits.max_chunks)


def main() -> int:
    job = json.loads(sys.argv[1])
    limits = _limits(job["limits"])
    limits.reader.apply()
    filename = job["filename"]
    refusal: tuple[str, str] | None = None
    try:
        chunks = _chunks(filename, job["max_tokens"], job["overlap_tokens"], limits)
    except UnreadableFileError as error:
        refusal = (error.code, error.message)
    except TooManyChunksError:
        refusal = (
            "invalid_file",
            f"{filename!r} makes more than {limits.max_chunks} chunks, the most one file may; larger chunks "
            "(`chunking_strategy.static.max_chunk_size_tokens`) make fewer",
        )
    except MemoryError:
        refusal = (
            "invalid_file",
            f"reading {filename!r} needs more than the {(limits.reader.memory_bytes or 0) // (1024 * 1024)} MiB of "
            "memory a file's reader may use",
        )
    except RecursionError:
        refusal = ("invalid_file", f"{filename!r} nests too deeply to be read")
    if refusal is not None:  # said outside the handler: the traceback, and the text it held, are gone
        _refuse(*refusal)
        return 0
    out = sys.stdout.buffer
    for chunk in chunks:
        out.write(orjson.dumps([chunk.text, chunk.tokens]) + b"\n")
    out.write(orjson.dumps({"chunks": len(chunks)}) + b"\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
