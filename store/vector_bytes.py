"""A vector as the store keeps it: float32 bytes, the form sqlite-vec reads (and PostgreSQL
keeps in a `bytea`)."""

from __future__ import annotations

import array
from collections.abc import Sequence


def to_bytes(vector: Sequence[float]) -> bytes:
    """float32, as sqlite-vec reads a vector."""
    return array.array("f", vector).tobytes()


def from_bytes(blob: bytes) -> list[float]:
    values = array.array("f")
    values.frombytes(blob)
    return values.tolist()
