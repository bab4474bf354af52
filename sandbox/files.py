"""Files that processes share: read from where a reader had got to, written so a reader sees
them whole or not at all."""

from __future__ import annotations

import os
from pathlib import Path

READ_BYTES = 1 << 20


def read_from(path: Path, offset: int, limit: int = READ_BYTES) -> bytes:
    """Up to `limit` bytes of `path` from `offset` (nothing, when it is not there yet)."""
    try:
        with path.open("rb") as file:
            file.seek(offset)
            return file.read(limit)
    except OSError:
        return b""


def write_atomically(path: Path, text: str) -> None:
    fresh = path.with_name(f".{path.name}.tmp")
    fresh.write_text(text)
    os.replace(fresh, path)
