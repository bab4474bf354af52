"""Parsing, chunking and attribute filters, pure: any bytes are text a store can keep or a
refusal, chunks stay within their size and lose no word, and a filter that validates never
raises."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.tokens import text_tokens
from file_search import ranking
from file_search.chunking import chunks_of
from file_search.parsing import text_of
from models.errors import UnreadableFileError
from models.file_search import ComparisonFilter, CompoundFilter
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


@given(content=st.binary(max_size=64), suffix=st.sampled_from([".txt", ".md", ".json", ".html", ".pdf", ".bin", ""]))
@settings(max_examples=300, deadline=None)
def test_any_bytes_are_text_without_nul_or_a_refusal_naming_why(content: bytes, suffix: str):
    """Whatever a file holds, its text can be kept by any store (PostgreSQL refuses NUL in text):
    it has no NUL, or the file is refused, never retried."""
    try:
        text = text_of(f"file{suffix}", content)
    except UnreadableFileError as error:
        assert error.code in ("unsupported_file", "invalid_file")
        return
    assert "\x00" not in text


def test_raw_nul_is_not_text_and_an_escaped_one_stays_escaped():
    assert text_of("a.json", b'{"a": "x\\u0000y"}') == '{"a": "x\\u0000y"}'
    with pytest.raises(UnreadableFileError) as refused:
        text_of("a.txt", b"\x00" * 15)
    assert refused.value.code == "invalid_file"


def test_a_comparison_of_large_integers_is_exact():
    """Numbers compare as they are: 2**60 + 1 is past 2**60 (as floats they are one number)."""
    parsed = ComparisonFilter.model_validate({"type": "gt", "key": "n", "value": 2**60})
    assert ranking.matches(parsed, {"n": 2**60 + 1})
    assert not ranking.matches(parsed, {"n": 2**60})
