"""What a backend says, made fit for a tenant to read: no URL (a backend's own, or any other
address it names), nothing that looks like a key (the whole key, a masked one such as
`sk-proj-****...wxyz`, a `Bearer` token, any part of the deployment's own key), and at most
`MAX_CHARS` characters. The operator's log keeps where the failure came from; the response
says what failed and why."""

from __future__ import annotations

import re
from collections.abc import Iterable

MAX_CHARS = 500
REDACTED = "[redacted]"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_KEYLIKE = re.compile(
    r"\b(?:sk|pk|rk|ak)[-_][A-Za-z0-9_*.\-]{3,}"  # sk-..., sk-proj-..., sk_live_...
    r"|\bBearer\s+\S+"
    r"|\S*\*{3,}\S*",  # masked: ****abcd, sk-...****...wxyz
    re.IGNORECASE,
)
KEY_PART_CHARS = 6
"""A run of this many characters of a deployment's key, in what a backend said, is redacted."""


def redacted(text: str, secrets: Iterable[str] = ()) -> str:
    text = text[: 4 * MAX_CHARS]  # what follows is linear in this, and no more is shown
    for secret in secrets:
        if len(secret) >= KEY_PART_CHARS:
            text = _without_parts_of(text, secret)
    text = _URL.sub("(an address)", text)
    text = _KEYLIKE.sub(REDACTED, text)
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _without_parts_of(text: str, secret: str) -> str:
    """`text` without any `KEY_PART_CHARS` characters in a row of `secret`: the key whole, its
    head and its tail (what providers show of a refused key)."""
    parts = {secret[start : start + KEY_PART_CHARS] for start in range(len(secret) - KEY_PART_CHARS + 1)}
    if not any(part in text for part in parts):
        return text
    hidden = [False] * len(text)
    for part in parts:
        start = text.find(part)
        while start >= 0:
            for index in range(start, start + KEY_PART_CHARS):
                hidden[index] = True
            start = text.find(part, start + 1)
    out, previous = [], False
    for character, hide in zip(text, hidden, strict=True):
        if hide and not previous:
            out.append(REDACTED)
        elif not hide:
            out.append(character)
        previous = hide
    return "".join(out)
