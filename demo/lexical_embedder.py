"""The small lexical embedder that ships with the package (the store keeps vectors as
`store/vector_bytes.py` says).

The lexical embedder (`LEXICAL_MODEL`) needs nothing downloaded and no backend: each word
(lower-cased, a trailing plural `s` dropped) and each pair of neighbouring words is hashed
to one of `LEXICAL_DIMENSIONS` signed buckets, weighted by a damped count, and the vector
is scaled to length 1. Texts that share words are near; it knows no synonyms. It is what
`dev` with the demo model uses, and what any server without `EMBEDDING_MODEL` uses. Pure.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence

LEXICAL_MODEL = "lexical"
LEXICAL_DIMENSIONS = 256

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """A text's words as the lexical embedder and keyword ranking see them."""
    found = []
    for word in _WORD.findall(text.lower()):
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.append(word)
    return found


def _bucket(feature: str) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little")
    return value % LEXICAL_DIMENSIONS, 1.0 if value >> 63 else -1.0


def lexical_vector(text: str) -> list[float]:
    seen = words(text)
    features = Counter(seen) + Counter(f"{a} {b}" for a, b in itertools.pairwise(seen))
    vector = [0.0] * LEXICAL_DIMENSIONS
    for feature, count in features.items():
        index, sign = _bucket(feature)
        vector[index] += sign * (1.0 + math.log(count))
    return normalised(vector)


def normalised(vector: Sequence[float]) -> list[float]:
    length = math.sqrt(sum(value * value for value in vector))
    return [value / length for value in vector] if length else list(vector)
