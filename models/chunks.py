"""A chunk of a file's text, and `chunking_strategy`'s bounds, as OpenAI's: `auto` is `static`
with the defaults (`file_search/chunking.py` cuts the chunks).

Plain Python, no pydantic: the file's reader (`file_search/reader_main.py`) imports it, and a
reader is a process of its own for each file, so every import here is paid once per file.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_TOKENS = 800
DEFAULT_OVERLAP_TOKENS = 400
MIN_MAX_TOKENS, MAX_MAX_TOKENS = 100, 4096


@dataclass(frozen=True)
class Chunk:
    """One piece of a file's text and its tokens (`context/tokens.py`'s estimate)."""

    text: str
    tokens: int
