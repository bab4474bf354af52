"""What a request becomes before anything is kept (`response_service/preparation.py`'s `prepare`), on a real
SQLite store and in milliseconds: a plain request is a response in progress (queued, in the background) with its input as it
will be stored; each refusal is a 4xx in OpenAI's shape that names its parameter; and
whatever a body holds, `prepare` answers with a response or such a refusal, and writes no row."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from http_plumbing.body import Limits
from models.errors import ApiError, InvalidRequestError, NotFoundError
from response_service.preparation import prepare
from store.database import Database
from store.repository import ResponseRepository

LIMITS = Limits()


@pytest.fixture
def repository(database: Database) -> ResponseRepository:
    return ResponseRepository(database)


async def rows(database: Database, table: str) -> int:
    async with database.read() as transaction:
        return int(await transaction.value(f"SELECT COUNT(*) FROM {table}"))  # noqa: S608 - our own names


async def test_a_plain_request_is_a_response_in_progress_with_its_input_as_stored(
    repository: ResponseRepository,
) -> None:
    prepared = await prepare({"model": "m", "input": "hello", "instructions": "be brief"}, repository, LIMITS)
    assert prepared.response.id.startswith("resp_") and prepared.response.status == "in_progress"
    assert prepared.response.model == "m" and prepared.response.instructions == "be brief"
    ((item_id, item),) = prepared.items
    assert item_id.startswith("msg_") and item["type"] == "message" and item["role"] == "user"
    assert not prepared.response.compact_only
    assert prepared.listings == [] and prepared.approvals == [] and prepared.containers == []


async def test_a_model_the_registry_does_not_serve_is_not_found(repository: ResponseRepository) -> None:
    with pytest.raises(NotFoundError) as refused:
        await prepare({"model": "nobody", "input": "hi"}, repository, LIMITS, known_model=lambda name: name == "m")
    assert refused.value.param == "model" and refused.value.code == "model_not_found"


async def test_a_served_name_replaces_the_asked_one(repository: ResponseRepository) -> None:
    prepared = await prepare({"model": "alias", "input": "hi"}, repository, LIMITS, served_model=lambda _: "real")
    assert prepared.response.model == "real"


async def test_more_output_tokens_than_the_server_allows_are_refused(repository: ResponseRepository) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        await prepare({"model": "m", "input": "hi", "max_output_tokens": 11}, repository, Limits(max_output_tokens=10))
    assert refused.value.param == "max_output_tokens"


async def test_a_request_with_nothing_to_answer_is_refused(repository: ResponseRepository) -> None:
    with pytest.raises(InvalidRequestError) as refused:
        await prepare({"model": "m", "input": []}, repository, LIMITS)
    assert refused.value.param == "input" and refused.value.code == "missing_required_parameter"


async def test_an_unknown_previous_response_is_not_found(repository: ResponseRepository) -> None:
    with pytest.raises(NotFoundError) as refused:
        await prepare({"model": "m", "input": "hi", "previous_response_id": "resp_nope"}, repository, LIMITS)
    assert refused.value.param == "previous_response_id"


async def test_input_ending_in_a_compaction_trigger_only_compacts(repository: ResponseRepository) -> None:
    payload = {"model": "m", "input": [{"role": "user", "content": "hi"}, {"type": "compaction_trigger"}]}
    prepared = await prepare(payload, repository, LIMITS)
    assert prepared.response.compact_only


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = st.sampled_from(
    [
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "previous_response_id",
        "conversation",
        "max_output_tokens",
        "text",
        "reasoning",
        "include",
        "metadata",
        "truncation",
        "store",
        "background",
        "prompt",
        "context_management",
        "parallel_tool_calls",
    ]
)
PAYLOADS = st.dictionaries(FIELDS, JSON, max_size=5).map(lambda payload: {"model": "m", "input": "hi"} | payload)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=PAYLOADS)
async def test_any_body_is_a_response_or_a_refusal_naming_what_is_wrong_and_leaves_no_row(
    repository: ResponseRepository, database: Database, payload: dict[str, Any]
) -> None:
    try:
        prepared = await prepare(payload, repository, LIMITS)
    except ApiError as refused:
        assert 400 <= refused.status_code < 500, refused
        assert refused.message
    else:
        assert prepared.response.status == ("queued" if prepared.response.background else "in_progress")
    for table in ("responses", "input_items", "events"):
        assert await rows(database, table) == 0
