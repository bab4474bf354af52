"""Chunking and attribute filters, pure: chunks stay within their size and lose no word, and a
filter that validates never raises."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context.tokens import text_tokens
from models.file_search import ComparisonFilter, CompoundFilter
from retrieval import ranking
from retrieval.chunking import chunks_of
from tests.support.strategies import ATTRIBUTE_VALUES, FILTERS, TEXT


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.text(min_size=1, max_size=30).filter(lambda word: not any(c.isspace() for c in word)), max_size=400
    ),
    size=st.integers(100, 400),
    overlap_share=st.floats(0, 0.5),
)
def test_chunks_stay_within_their_size_and_lose_no_word(words: list[str], size: int, overlap_share: float):
    overlap = int(size * overlap_share) if int(size * overlap_share) <= size // 2 else size // 2
    text = " ".join(words)
    chunks = chunks_of(text, size, overlap)
    assert all(chunk.tokens <= size and text_tokens(chunk.text) <= size for chunk in chunks)
    joined = " ".join(chunk.text for chunk in chunks)
    assert all(word in joined for word in words if text_tokens(word) <= size)


@settings(max_examples=200, deadline=None)
@given(node=FILTERS, attributes=st.dictionaries(TEXT, ATTRIBUTE_VALUES, max_size=4))
def test_a_filter_that_validates_never_raises(node: dict[str, Any], attributes: dict[str, Any]):
    try:
        parsed = (CompoundFilter if node["type"] in ("and", "or") else ComparisonFilter).model_validate(node)
    except ValueError:
        return
    assert ranking.matches(parsed, attributes) in (True, False)
