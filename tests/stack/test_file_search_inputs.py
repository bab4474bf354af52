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

from tests.support import store_probe
from tests.support.stack import Stack
from tests.support.strategies import ATTRIBUTE_VALUES, FILTERS, TEXT

_CHUNKING = st.one_of(
    ATTRIBUTE_VALUES,
    st.fixed_dictionaries({"type": st.sampled_from(["auto", "static", "other"])}),
    st.fixed_dictionaries(
        {
            "type": st.just("static"),
            "static": st.fixed_dictionaries(
                {"max_chunk_size_tokens": st.integers(0, 5000), "chunk_overlap_tokens": st.integers(-1, 3000)}
            ),
        }
    ),
)
_STORE_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(TEXT, st.text(min_size=250, max_size=300), st.integers()),
        "file_ids": st.one_of(ATTRIBUTE_VALUES, st.lists(st.sampled_from(["file_missing", "", "x" * 90]), max_size=3)),
        "chunking_strategy": _CHUNKING,
        "expires_after": st.one_of(
            ATTRIBUTE_VALUES,
            st.fixed_dictionaries({"anchor": st.sampled_from(["last_active_at", "x"]), "days": st.integers(-1, 400)}),
        ),
        "metadata": st.one_of(ATTRIBUTE_VALUES, st.dictionaries(TEXT, TEXT, max_size=3)),
        "bogus": st.integers(),
    },
)
_SEARCH_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "query": st.one_of(ATTRIBUTE_VALUES, st.lists(TEXT, max_size=12), st.text(min_size=1, max_size=50)),
        "max_num_results": st.one_of(st.integers(-1, 60), ATTRIBUTE_VALUES),
        "filters": st.one_of(FILTERS, ATTRIBUTE_VALUES),
        "ranking_options": st.one_of(
            ATTRIBUTE_VALUES,
            st.fixed_dictionaries(
                {},
                optional={
                    "ranker": st.sampled_from(["auto", "none", "best"]),
                    "score_threshold": st.floats(-1, 2, allow_nan=False),
                    "hybrid_search": st.fixed_dictionaries(
                        {"embedding_weight": st.floats(-1, 2), "text_weight": st.floats(-1, 2)}
                    ),
                },
            ),
        ),
        "rewrite_query": ATTRIBUTE_VALUES,
    },
)
STORE_PARAMS = ("name", "file_ids", "chunking_strategy", "expires_after", "metadata", "bogus")
SEARCH_PARAMS = ("query", "max_num_results", "filters", "ranking_options", "rewrite_query", None)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_STORE_BODIES)
async def test_any_vector_store_body_makes_one_or_is_a_4xx_naming_its_parameter_that_leaves_nothing(
    stack: Stack, body: dict[str, Any]
):
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
async def test_any_search_body_searches_or_is_a_400_naming_its_parameter(
    stack: Stack, searched_store: str, body: dict[str, Any]
):
    async with stack.http() as http:
        answer = await http.post(f"/v1/vector_stores/{searched_store}/search", json=body)
    if answer.status_code == 200:
        assert answer.json()["object"] == "vector_store.search_results.page"
        return
    assert answer.status_code == 400, answer.text
    param = answer.json()["error"]["param"]
    assert (param.split(".")[0].split("[")[0] if param else None) in SEARCH_PARAMS, answer.text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    content=st.one_of(st.binary(max_size=3000), st.text(max_size=3000).map(str.encode)),
    suffix=st.sampled_from([".txt", ".md", ".html", ".json", ".pdf", ".png", "", ".csv"]),
)
async def test_any_file_ends_completed_or_failed_with_a_reason(stack: Stack, content: bytes, suffix: str):
    async with stack.http() as http:
        uploaded = await http.post(
            "/v1/files", files={"file": (f"upload{suffix}", content), "purpose": (None, "assistants")}
        )
        assert uploaded.status_code == 200, uploaded.text
        store = (await http.post("/v1/vector_stores", json={"file_ids": [uploaded.json()["id"]]})).json()
        deadline = time.monotonic() + 30
        while (entry := (await http.get(f"/v1/vector_stores/{store['id']}/files/{uploaded.json()['id']}")).json())[
            "status"
        ] == "in_progress":
            assert time.monotonic() < deadline, "ingestion did not end"
            await asyncio.sleep(0.1)
        await http.delete(f"/v1/vector_stores/{store['id']}")
        await http.delete(f"/v1/files/{uploaded.json()['id']}")
    assert entry["status"] in ("completed", "failed"), entry
    if entry["status"] == "failed":
        assert entry["last_error"]["code"] in ("unsupported_file", "invalid_file"), entry


@pytest.fixture(scope="module")
async def searched_store(stack: Stack) -> str:
    async with stack.http() as http:
        uploaded = await http.post(
            "/v1/files", files={"file": ("notes.md", b"alpha beta gamma"), "purpose": (None, "assistants")}
        )
        store = (await http.post("/v1/vector_stores", json={"file_ids": [uploaded.json()["id"]]})).json()
    return store["id"]


async def test_a_filter_of_millions_of_values_is_refused_at_once(stack: Stack, searched_store: str):
    """A filter `in` list of 4M values once held the event loop 3.9 s: each list and the whole
    filter are bounded (`models/file_search.py`), and refused before each value is checked; a
    body past what filters at their bounds need is refused before it is parsed."""
    huge = {"query": "alpha", "filters": {"type": "in", "key": "topic", "value": list(range(100_000))}}
    many = {
        "query": "alpha",
        "filters": {
            "type": "or",
            "filters": [
                {"type": "or", "filters": [{"type": "eq", "key": "k", "value": n} for n in range(30)]}
                for _ in range(30)
            ],
        },
    }
    async with stack.http() as http:
        for body, said in ((huge, "at most 1000 values"), (many, "at most 256 comparisons")):
            answer = await http.post(f"/v1/vector_stores/{searched_store}/search", json=body)
            assert answer.status_code == 400 and said in answer.json()["error"]["message"], answer.text
            assert answer.json()["error"]["param"].startswith("filters"), answer.text
        # Past what a search's filters may hold at their bounds, the body is not even parsed.
        larger = {"query": "alpha", "filters": {"type": "in", "key": "topic", "value": list(range(2_000_000))}}
        answer = await http.post(f"/v1/vector_stores/{searched_store}/search", json=larger)
        assert answer.status_code == 413 and answer.json()["error"]["code"] == "request_too_large", answer.text


async def test_a_files_content_comes_in_pages(stack: Stack, sdk):
    """A file's content endpoint once returned 25.8 MB at once: now a page holds at most a
    megabyte of text, and `next_page` (given back as `?page=`) goes on where it ended."""
    text = " ".join(f"word{n}" for n in range(400_000))
    uploaded = await sdk.files.create(file=("long.txt", text.encode()), purpose="assistants")
    store = await sdk.vector_stores.create(name="paged", file_ids=[uploaded.id])
    deadline = time.monotonic() + 60
    while (await sdk.vector_stores.retrieve(store.id)).status != "completed":
        assert time.monotonic() < deadline, "ingestion did not end"
        await asyncio.sleep(0.2)
    pages, token = [], None
    while True:
        page = await sdk.vector_stores.files.content(
            uploaded.id, vector_store_id=store.id, extra_query={"page": token} if token else None
        )
        raw = page.model_dump() if hasattr(page, "model_dump") else {}
        pages.append([part.text for part in page.data])
        assert sum(len(part) for part in pages[-1]) <= 1024 * 1024 + 4 * 800 * 4
        token = getattr(page, "next_page", None) or raw.get("next_page")
        if not token:
            break
    assert len(pages) > 1
    chunks = [part for each in pages for part in each]
    assert chunks[0].startswith("word0 ") and chunks[-1].endswith("word399999")
    async with stack.http() as http:
        bad = await http.get(f"/v1/vector_stores/{store.id}/files/{uploaded.id}/content", params={"page": "x"})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "page"
    await sdk.vector_stores.delete(store.id)
    await sdk.files.delete(uploaded.id)
