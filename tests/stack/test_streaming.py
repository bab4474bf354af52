"""Streaming: OpenAI's event shapes and order, resume, disconnects, retries and a killed worker."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from access.quotas import QuotaSettings
from tests.support.processes import kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack
from tests.support.waiting import until_terminal

STRICT_EVENT = TypeAdapter(ResponseStreamEvent)
TOOL = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}


async def raw_events(
    stack: Stack, path: str, *, method: str = "GET", body: dict | None = None, limit: int | None = None
):
    """SSE frames as (event name, data) pairs, read with plain httpx."""
    frames = []
    async with stack.http() as http, http.stream(method, path, json=body) as answer:
        assert answer.status_code == 200, await answer.aread()
        assert answer.headers["content-type"].startswith("text/event-stream")
        name = None
        async for line in answer.aiter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                frames.append((name, json.loads(line.removeprefix("data: "))))
                if limit is not None and len(frames) >= limit:
                    break
    return frames


def assert_strict_and_ordered(frames: list[tuple[str, dict]]) -> None:
    for index, (name, data) in enumerate(frames):
        assert name == data["type"]
        assert data["sequence_number"] == frames[0][1]["sequence_number"] + index
        STRICT_EVENT.validate_python(data, strict=False)  # every field the SDK's type requires


async def test_text_stream_has_openai_event_order_and_matches_the_stored_response(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="The quick brown fox jumps over the lazy dog.")])
    frames = await raw_events(
        stack, "/v1/responses", method="POST", body={"model": model, "input": "tell me", "stream": True}
    )
    assert_strict_and_ordered(frames)
    types = [name for name, _ in frames]
    assert types[:5] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert types[-5:] == [
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert frames[0][1]["sequence_number"] == 0
    deltas = "".join(data["delta"] for name, data in frames if name == "response.output_text.delta")
    assert deltas == "The quick brown fox jumps over the lazy dog."
    item_ids = {data["item_id"] for name, data in frames if "item_id" in data}
    assert item_ids == {frames[2][1]["item"]["id"]}, "an item keeps its id from its first event on"
    final = frames[-1][1]["response"]
    stored = await sdk.responses.retrieve(final["id"])
    assert stored.model_dump(mode="json") == openai.types.responses.Response.model_validate(final).model_dump(
        mode="json"
    )


async def test_sdk_stream_helper_accumulates_the_stored_text(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="streamed through the SDK helper")])
    async with sdk.responses.stream(model=model, input="hi") as stream:
        texts = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(texts) == final.output_text == "streamed through the SDK helper"
    assert (await sdk.responses.retrieve(final.id)).output_text == final.output_text


async def test_function_call_arguments_stream(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="Looking it up.", tool_calls=[("lookup", {"q": "temporal durable execution"})])])
    async with sdk.responses.stream(model=model, input="search", tools=[TOOL]) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    types = [event.type for event in events]
    assert types.count("response.output_item.added") == 2 and types.count("response.output_item.done") == 2
    argument_deltas = [event.delta for event in events if event.type == "response.function_call_arguments.delta"]
    assert len(argument_deltas) > 1
    done = next(event for event in events if event.type == "response.function_call_arguments.done")
    assert "".join(argument_deltas) == done.arguments == json.dumps({"q": "temporal durable execution"})
    call = final.output[1]
    assert call.type == "function_call" and call.arguments == done.arguments
    added = next(e for e in events if e.type == "response.output_item.added" and e.item.type == "function_call")
    assert added.item.call_id == call.call_id and added.output_index == 1


async def test_resume_from_the_middle_of_a_finished_and_a_running_stream(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="one two three four five six seven eight", chunk_delay=0.05)])
    head = await raw_events(
        stack, "/v1/responses", method="POST", body={"model": model, "input": "count", "stream": True}, limit=5
    )
    response_id = head[0][1]["response"]["id"]
    # The client went away after 5 events; the response goes on. Resume while it still runs:
    rest = [event async for event in await sdk.responses.retrieve(response_id, stream=True, starting_after=4)]
    assert rest[0].sequence_number == 5 and rest[-1].type == "response.completed"
    full = [data for _, data in head] + [event.model_dump(mode="json", exclude_unset=True) for event in rest]
    assert [event["sequence_number"] for event in full] == list(range(len(full))), "every event exactly once"
    text = "".join(event["delta"] for event in full if event["type"] == "response.output_text.delta")
    assert text == "one two three four five six seven eight"
    # And once it has finished, a replay from the start gives the same log.
    replay = await raw_events(stack, f"/v1/responses/{response_id}?stream=true")
    assert [data for _, data in replay] == [json.loads(json.dumps(event)) for event in await _log(stack, response_id)]
    assert len(replay) == len(full)
    assert (await sdk.responses.retrieve(response_id)).output_text == text


async def _log(stack: Stack, response_id: str) -> list[dict]:
    frames = await raw_events(stack, f"/v1/responses/{response_id}?stream=true&starting_after=-1")
    return [data for _, data in frames]


async def test_non_streamed_response_cannot_be_streamed_later(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    response = await sdk.responses.create(model=model, input="plain")
    async with stack.http() as http:
        answer = await http.get(f"/v1/responses/{response.id}", params={"stream": "true"})
    assert answer.status_code == 400 and "stream" in answer.json()["error"]["message"]


async def test_upstream_stream_cut_midway_is_retried_without_duplicate_text(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    text = "This sentence is long enough to be cut in the middle of its stream."
    backend.script(model, [Reply(text=text, cut_after_chunks=6), Reply(text=text)])
    async with sdk.responses.stream(model=model, input="go") as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    assert len(backend.requests(model)) == 2, "the cut stream was retried"
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert deltas == text == final.output_text
    assert [e.type for e in events].count("response.output_item.added") == 1


async def test_stream_store_false_leaves_nothing_behind(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    async with sdk.responses.stream(model=model, input="ephemeral", store=False) as stream:
        final = await stream.get_final_response()
    assert final.output_text == "echo: ephemeral"
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.retrieve(final.id)
    assert not await stack_events(stack, final.id)


async def test_a_client_that_leaves_gives_its_stream_back_and_the_response_goes_on(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    """A key may hold one stream. Its client leaves after the first delta of a long answer:
    the stream stops and is given back at once, so the key's next stream is accepted while
    the first response is still answering; that one completes all the same."""
    text = "slow " * 60
    backend.script(model, [Reply(text=text, chunk_delay=0.05, chunk_chars=5), Reply(text="after")])
    async with running_stack(temporal_address, backend, store, quotas=QuotaSettings(max_streams_per_key=1)) as own:
        first = await raw_events(
            own, "/v1/responses", method="POST", body={"model": model, "input": "one", "stream": True}, limit=5
        )
        assert first[-1][0] == "response.output_text.delta"
        first_id = first[0][1]["response"]["id"]
        async with own.sdk() as sdk:
            for _ in range(100):  # the server hears the client leave within a moment
                try:
                    second = await sdk.responses.create(model=model, input="two", stream=True)
                    break
                except openai.RateLimitError:
                    await asyncio.sleep(0.02)
            else:
                raise AssertionError("the stream of the client that left was never given back")
            assert (await sdk.responses.retrieve(first_id)).status == "in_progress"
            events = [event async for event in second]
            assert events[-1].type == "response.completed" and events[-1].response.output_text == "after"
            ended = await until_terminal(sdk, first_id)
    assert ended.status == "completed" and ended.output_text == text


async def stack_events(stack: Stack, response_id: str) -> list:
    from store.event_log import EventLog
    from store.opening import open_database

    db = open_database(stack.settings.database_url)
    try:
        return await EventLog(db).read(response_id, after=-1)
    finally:
        await db.close()


async def test_worker_killed_mid_stream_the_stream_still_ends_coherently(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    text = " ".join(f"word{index}" for index in range(40))
    backend.script(model, [Reply(text=text, chunk_delay=0.05), Reply(text=text, chunk_delay=0.01)])
    async with running_stack(temporal_address, backend, store, with_worker=False, task_timeout_seconds=2) as stack:
        first_worker = spawn_worker(stack)
        second_worker = None
        try:
            async with stack.sdk(timeout=60) as client:
                async with client.responses.stream(model=model, input="long answer") as stream:
                    events = []
                    async for event in stream:
                        events.append(event)
                        deltas = [e for e in events if e.type == "response.output_text.delta"]
                        if len(deltas) == 8 and second_worker is None:
                            kill(first_worker)
                            second_worker = spawn_worker(stack)
                    final = await stream.get_final_response()
                stored = await client.responses.retrieve(final.id)
        finally:
            kill(first_worker)
            kill(second_worker)
    assert second_worker is not None, "the worker was not killed mid-stream"
    assert len(backend.requests(model)) == 2, "the inference call ran again on the new worker"
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert deltas == text == final.output_text == stored.output_text
    assert [event.sequence_number for event in events] == list(range(len(events)))
