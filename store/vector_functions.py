"""sqlite-vec's functions on every SQLite connection of the store, so chunk searches run as
SQL (`store/chunks.py`): the extension when this Python's `sqlite3` can load one, else the
same function in Python (exact, and much slower: about 40x at 10,000 chunks), with a warning
that says how to get the fast one."""

from __future__ import annotations

import logging
import math
import sqlite3

from store.vector_bytes import from_bytes

log = logging.getLogger(__name__)
_warned = False


def cosine_distance(left: bytes, right: bytes) -> float | None:
    """`vec_distance_cosine` of two float32 vectors (None, as sqlite-vec answers, when one
    has no length)."""
    a, b = from_bytes(left), from_bytes(right)
    if len(a) != len(b):
        return None
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / norms if norms else None


def extension_loadable() -> bool:
    return hasattr(sqlite3.Connection, "enable_load_extension")


def install(connection: sqlite3.Connection) -> str:
    """Give `connection` `vec_distance_cosine`; which implementation it got (`sqlite-vec` or
    `python`)."""
    if extension_loadable():
        import sqlite_vec

        try:
            connection.enable_load_extension(True)
            sqlite_vec.load(connection)
            return "sqlite-vec"
        except sqlite3.OperationalError as error:
            reason = str(error)
        finally:
            connection.enable_load_extension(False)
    else:
        reason = "this Python's sqlite3 was built without loadable extensions"

    def distance(left: bytes, right: bytes) -> float | None:
        global _warned
        if not _warned:  # said when a search runs, not by every command that opens the store
            _warned = True
            log.warning(
                "vector search on SQLite runs in Python, not sqlite-vec (%s): exact but slow on large "
                "vector stores; use a Python whose sqlite3 loads extensions (Debian's, or the Docker "
                "image's)",
                reason,
            )
        return cosine_distance(left, right)

    connection.create_function("vec_distance_cosine", 2, distance, deterministic=True)
    return "python"
