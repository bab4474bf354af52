"""A document's text cut into overlapping chunks, counted in tokens (`context/tokens.py`'s
estimate, which errs high, so a chunk never holds more than it says).

`chunking_strategy` as OpenAI takes it: `auto` is `static` with 800 tokens a chunk and 400
overlapping; `static` sets `max_chunk_size_tokens` (100 to 4096) and `chunk_overlap_tokens`
(at most half of it). Chunks break between words; a word longer than a chunk is cut; a run of
blanks between two words keeps at most `MAX_GAP` of its characters. Time and memory linear in
the text. Pure.
"""

from __future__ import annotations

import re

from context.tokens import text_tokens
from models.chunks import DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS, Chunk

MAX_GAP = 16
"""Blanks kept between two words: a page of spaces is as far apart as a few."""

_WORD = re.compile(r"\S+")


def _pieces(text: str, max_tokens: int) -> list[tuple[str, int]]:
    """Words with (at most `MAX_GAP` of) the blanks before them, and what each costs; a word
    dearer than a chunk in parts (a token is never fewer than one character, so `max_tokens`
    characters fit). A word's blanks are found from where the one before ended, never by a
    pattern that starts again at each blank (`\\s*\\S+` took quadratic time on a long run of
    blanks with no word after it)."""
    pieces: list[tuple[str, int]] = []
    ended = 0
    for match in _WORD.finditer(text):
        gap = text[ended : min(match.start(), ended + MAX_GAP)]
        ended = match.end()
        word = gap + match.group()
        cost = text_tokens(word)
        if cost <= max_tokens:
            pieces.append((word, cost))
            continue
        for start in range(0, len(word), max_tokens):
            part = word[start : start + max_tokens]
            pieces.append((part, text_tokens(part)))
    return pieces


class TooManyChunksError(ValueError):
    """The text makes more chunks than one file may."""


def chunks_of(
    text: str,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    *,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """`text` in chunks of at most `max_tokens`, each next one repeating about the last
    `overlap_tokens` of the one before; `TooManyChunksError` past `max_chunks`."""
    if not MIN_MAX_TOKENS <= max_tokens <= MAX_MAX_TOKENS or not 0 <= overlap_tokens <= max_tokens // 2:
        raise ValueError(f"no chunking of {max_tokens} tokens overlapping {overlap_tokens}")
    pieces = _pieces(text, max_tokens)
    chunks: list[Chunk] = []
    start = 0
    while start < len(pieces):
        end, used = start, 0
        while end < len(pieces) and used + pieces[end][1] <= max_tokens:
            used += pieces[end][1]
            end += 1
        chunks.append(Chunk("".join(word for word, _ in pieces[start:end]).strip(), used))
        if max_chunks is not None and len(chunks) > max_chunks:
            raise TooManyChunksError(max_chunks)
        if end >= len(pieces):
            break
        back, kept = end, 0  # the next chunk starts `overlap_tokens` before this one's end
        while back - 1 > start and kept + pieces[back - 1][1] <= overlap_tokens:
            back -= 1
            kept += pieces[back][1]
        start = max(back, start + 1)
    return [chunk for chunk in chunks if chunk.text]
