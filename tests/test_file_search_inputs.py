"""Hostile input to the Files and Vector Stores APIs, as properties: any body is done or a 4xx
in OpenAI's shape naming its parameter, never a 500, and a refusal leaves no row; any bytes
under any name, once in a vector store, end `completed` or `failed` with a reason, in bounded
time. And the pure parts: chunks stay within their size and lose no word; filters never raise."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context.tokens import text_tokens
from models.file_search import ComparisonFilter, CompoundFilter
from retrieval import ranking
from retrieval.chunking import chunks_of
from tests import store_probe
from tests.conftest import Stack

_TEXT = st.text(max_size=40)
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 10_000), st.floats(allow_nan=False, allow_infinity=False), _TEXT,
                    st.lists(st.one_of(st.integers(), _TEXT), max_size=3))
_CHUNKING = st.one_of(_VALUES, st.fixed_dictionaries({"type": st.sampled_from(["auto", "static", "other"])}),
                      st.fixed_dictionaries({"type": st.just("static"), "static": st.fixed_dictionaries({
                          "max_chunk_size_tokens": st.integers(0, 5000),
                          "chunk_overlap_tokens": st.integers(-1, 3000)})}))
_FILTER = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like"]),
                           "key": st.one_of(_TEXT, st.integers()), "value": _VALUES}),
    lambda inner: st.fixed_dictionaries({"type": st.sampled_from(["and", "or", "xor"]),
                                         "filters": st.lists(inner, max_size=3)}),
    max_leaves=6)
_STORE_BODIES = st.fixed_dictionaries({}, optional={
    "name": st.one_of(_TEXT, st.text(min_size=250, max_size=300), st.integers()),
    "file_ids": st.one_of(_VALUES, st.lists(st.sampled_from(["file_missing", "", "x" * 90]), max_size=3)),
    "chunking_strategy": _CHUNKING,
    "expires_after": st.one_of(_VALUES, st.fixed_dictionaries({"anchor": st.sampled_from(["last_active_at", "x"]),
                                                               "days": st.integers(-1, 400)})),
    "metadata": st.one_of(_VALUES, st.dictionaries(_TEXT, _TEXT, max_size=3)),
    "bogus": st.integers(),
})
_SEARCH_BODIES = st.fixed_dictionaries({}, optional={
    "query": st.one_of(_VALUES, st.lists(_TEXT, max_size=12), st.text(min_size=1, max_size=50)),
    "max_num_results": st.one_of(st.integers(-1, 60), _VALUES),
    "filters": st.one_of(_FILTER, _VALUES),
    "ranking_options": st.one_of(_VALUES, st.fixed_dictionaries({}, optional={
        "ranker": st.sampled_from(["auto", "none", "best"]), "score_threshold": st.floats(-1, 2, allow_nan=False),
        "hybrid_search": st.fixed_dictionaries({"embedding_weight": st.floats(-1, 2),
                                                "text_weight": st.floats(-1, 2)})})),
    "rewrite_query": _VALUES,
})
STORE_PARAMS = ("name", "file_ids", "chunking_strategy", "expires_after", "metadata", "bogus")
SEARCH_PARAMS = ("query", "max_num_results", "filters", "ranking_options", "rewrite_query", None)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_STORE_BODIES)
async def test_any_vector_store_body_makes_one_or_is_a_4xx_naming_its_parameter_that_leaves_nothing(
        stack: Stack, body: dict[str, Any]):
    before = await store_probe.value(stack.settings.database_url, "SELECT COUNT(*) FROM vector_stores")
    async with stack.http() as http:
        answer = await http.post("/v1/vector_stores", json=body)
        if answer.status_code == 200:
            assert (await http.delete(f"/v1/vector_stores/{answer.json()['id']}")).status_code == 200
            return
    assert answer.status_code in (400, 404), answer.text
    param = answer.json()["error"]["param"]
    assert param is not None and param.split(".")[0].split("[")[0] in STORE_PARAMS, answer.text
    assert await store_probe.value(stack.settings.database_url, "SELECT COUNT(*) FROM vector_stores") == before


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_SEARCH_BODIES)
async def test_any_search_body_searches_or_is_a_400_naming_its_parameter(stack: Stack, searched_store: str,
                                                                        body: dict[str, Any]):
    async with stack.http() as http:
        answer = await http.post(f"/v1/vector_stores/{searched_store}/search", json=body)
    if answer.status_code == 200:
        assert answer.json()["object"] == "vector_store.search_results.page"
        return
    assert answer.status_code == 400, answer.text
    param = answer.json()["error"]["param"]
    assert (param.split(".")[0].split("[")[0] if param else None) in SEARCH_PARAMS, answer.text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.one_of(st.binary(max_size=3000), st.text(max_size=3000).map(str.encode)),
       suffix=st.sampled_from([".txt", ".md", ".html", ".json", ".pdf", ".png", "", ".csv"]))
async def test_any_file_ends_completed_or_failed_with_a_reason(stack: Stack, content: bytes, suffix: str):
    async with stack.http() as http:
        uploaded = await http.post("/v1/files", files={"file": (f"upload{suffix}", content),
                                                       "purpose": (None, "assistants")})
        assert uploaded.status_code == 200, uploaded.text
        store = (await http.post("/v1/vector_stores", json={"file_ids": [uploaded.json()["id"]]})).json()
        deadline = time.monotonic() + 30
        while (entry := (await http.get(f"/v1/vector_stores/{store['id']}/files/{uploaded.json()['id']}")).json()
               )["status"] == "in_progress":
            assert time.monotonic() < deadline, "ingestion did not end"
            await asyncio.sleep(0.1)
        await http.delete(f"/v1/vector_stores/{store['id']}")
        await http.delete(f"/v1/files/{uploaded.json()['id']}")
    assert entry["status"] in ("completed", "failed"), entry
    if entry["status"] == "failed":
        assert entry["last_error"]["code"] in ("unsupported_file", "invalid_file"), entry


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(min_size=1, max_size=30).filter(lambda word: not any(c.isspace() for c in word)),
                      max_size=400),
       size=st.integers(100, 400), overlap_share=st.floats(0, 0.5))
def test_chunks_stay_within_their_size_and_lose_no_word(words: list[str], size: int, overlap_share: float):
    overlap = int(size * overlap_share) if int(size * overlap_share) <= size // 2 else size // 2
    text = " ".join(words)
    chunks = chunks_of(text, size, overlap)
    assert all(chunk.tokens <= size and text_tokens(chunk.text) <= size for chunk in chunks)
    joined = " ".join(chunk.text for chunk in chunks)
    assert all(word in joined for word in words if text_tokens(word) <= size)


@settings(max_examples=200, deadline=None)
@given(node=_FILTER, attributes=st.dictionaries(_TEXT, _VALUES, max_size=4))
def test_a_filter_that_validates_never_raises(node: dict[str, Any], attributes: dict[str, Any]):
    try:
        parsed = (CompoundFilter if node["type"] in ("and", "or") else ComparisonFilter).model_validate(node)
    except ValueError:
        return
    assert ranking.matches(parsed, attributes) in (True, False)


@pytest.fixture(scope="module")
async def searched_store(stack: Stack) -> str:
    async with stack.http() as http:
        uploaded = await http.post("/v1/files", files={"file": ("notes.md", b"alpha beta gamma"),
                                                       "purpose": (None, "assistants")})
        store = (await http.post("/v1/vector_stores", json={"file_ids": [uploaded.json()["id"]]})).json()
    return store["id"]
