"""How a chunk is scored for a query, and which files an attribute filter lets through. Pure.

A chunk's score mixes its embedding's cosine similarity to the query's (clamped to 0..1)
with the share of the query's distinct words it contains, weighted as `ranking_options`'
`hybrid_search` says (by default 0.7 and 0.3); `score_threshold` drops what scores less.
`ranker: "none"` ranks by the embedding alone.
"""

from __future__ import annotations

from typing import Any, TypeVar

from demo.lexical_embedder import words
from models.file_search import ComparisonFilter, CompoundFilter, RankingOptions

EMBEDDING_WEIGHT, TEXT_WEIGHT = 0.7, 0.3


Ordered = TypeVar("Ordered", float, str)


def weights(options: RankingOptions | None) -> tuple[float, float]:
    if options is not None and options.ranker == "none":
        return 1.0, 0.0
    if options is not None and options.hybrid_search is not None:
        total = options.hybrid_search.embedding_weight + options.hybrid_search.text_weight
        return options.hybrid_search.embedding_weight / total, options.hybrid_search.text_weight / total
    return EMBEDDING_WEIGHT, TEXT_WEIGHT


def keyword_score(query_words: set[str], text: str) -> float:
    if not query_words:
        return 0.0
    return len(query_words & set(words(text))) / len(query_words)


def score(similarity: float, query_words: set[str], text: str, weighting: tuple[float, float]) -> float:
    by_embedding, by_text = weighting
    blended = by_embedding * min(1.0, max(0.0, similarity))
    if by_text:
        blended += by_text * keyword_score(query_words, text)
    return round(blended, 6)


def _compare(kind: str, have: Any, want: Any) -> bool:
    if kind in ("in", "nin"):
        found = isinstance(want, list) and have in want
        return found if kind == "in" else not found
    if kind == "eq":
        return bool(have == want)
    if kind == "ne":
        return bool(have != want)
    if isinstance(have, bool) or isinstance(want, bool):
        return False
    if isinstance(have, (int, float)) and isinstance(want, (int, float)):
        return _ordered(kind, have, want)
    if isinstance(have, str) and isinstance(want, str):
        return _ordered(kind, have, want)
    return False


def _ordered(kind: str, have: Ordered, want: Ordered) -> bool:
    """`gt`, `gte`, `lt`, `lte` of two numbers or two strings."""
    return {"gt": have > want, "gte": have >= want, "lt": have < want, "lte": have <= want}[kind]


def matches(node: ComparisonFilter | CompoundFilter | None, attributes: dict[str, Any]) -> bool:
    """Whether a file with these attributes passes the filter (none: every file). A file
    without the key passes only `ne` and `nin`."""
    if node is None:
        return True
    if isinstance(node, CompoundFilter):
        results = (matches(each, attributes) for each in node.filters)
        return all(results) if node.type == "and" else any(results)
    if node.key not in attributes:
        return node.type in ("ne", "nin")
    return _compare(node.type, attributes[node.key], node.value)
