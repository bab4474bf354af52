"""Pure: where the next window of streamed text ends.

A window is one or more whole sentences of at most `window_chars` characters: it ends after
the last sentence end (`.`, `!` or `?` before a space, or a line break) among the next
`window_chars` characters. A longer sentence is cut once `window_chars` characters have
come, at the last space among them (a word is never split between two windows unless it is
longer than a window). At the end of the stream the rest is the last window. Only the window's
own characters are read: the cost is linear in the text, whatever its shape.
"""

from __future__ import annotations

SENTENCE_ENDS = frozenset(".!?。！？")


def window_end(text: str, window_chars: int, *, final: bool) -> int | None:
    """The end (exclusive) of the window at the start of `text` (the text not checked yet), or
    None while it is not complete."""
    if not text:
        return None
    limit = min(len(text), window_chars)
    for index in range(limit - 1, -1, -1):
        character = text[index]
        if character == "\n" or (character in SENTENCE_ENDS and index + 1 < len(text) and text[index + 1].isspace()):
            return index + 1
    if len(text) >= window_chars:
        space = max(text.rfind(" ", 0, limit), text.rfind("\n", 0, limit))
        return space + 1 if space > 0 else limit
    return len(text) if final else None
