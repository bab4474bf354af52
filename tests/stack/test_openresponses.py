"""OpenResponses compliance: every case of its compliance suite (basic, streaming, system
prompt, tool calling plain and streamed, image input, multi-turn) and the rest a client of
the spec relies on (function-call round trip, file input, `previous_response_id`, reasoning,
background, a stream that fails outside a response), over raw HTTP. Every response object
and every streamed event is validated against the spec's shapes (`tests/support/openresponses.py`),
and the official SDK, strict, parses the same responses."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import openai
import pytest

from models.events import opening_events
from models.responses import Response
from store.event_log import StoredEvent
from tests.support.openresponses import validate_event, validate_response
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a location",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]},
}
# A 1x1 PNG, and a few bytes standing for a PDF.
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
PDF = "data:application/pdf;base64," + base64.b64encode(b"%PDF-1.4 a tiny document").decode()


async def create(http: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    answer = await http.post("/v1/responses", json=body)
    assert answer.status_code == 200, answer.text
    data = answer.json()
    validate_response(data)
    return data


async def stream(http: httpx.AsyncClient, body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every event, each validated, and the final response, validated."""
    events = []
    async with http.stream("POST", "/v1/responses", json=body | {"stream": True}) as answer:
        assert answer.status_code == 200
        async for line in answer.aiter_lines():
            if line.startswith("data:"):
                event = json.loads(line[5:])
                validate_event(event)
                events.append(event)
    final = events[-1]
    assert final["type"] in ("response.completed", "response.failed", "response.incomplete")
    return events, validate_response(final["response"]).model_dump()


def message(role: str, content: Any) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content}


@pytest.fixture
async def http(stack: Stack):
    async with stack.http() as client:
        yield client


async def test_basic_response(http: httpx.AsyncClient, sdk: openai.AsyncOpenAI, model: str):
    data = await create(http, {"model": model, "input": [message("user", "Say hello in exactly 3 words.")]})
    assert data["status"] == "completed" and data["output"]
    assert (
        data["temperature"],
        data["top_p"],
        data["presence_penalty"],
        data["frequency_penalty"],
        data["top_logprobs"],
    ) == (1.0, 1.0, 0.0, 0.0, 0), "the effective sampling values, defaults included"
    assert (await sdk.responses.retrieve(data["id"])).output_text == "echo: Say hello in exactly 3 words."


async def test_streaming_response(http: httpx.AsyncClient, model: str):
    events, final = await stream(http, {"model": model, "input": [message("user", "Count from 1 to 5.")]})
    assert final["status"] == "completed"
    types = [event["type"] for event in events]
    assert types[:2] == ["response.created", "response.in_progress"] and "response.output_text.delta" in types
    assert [event["sequence_number"] for event in events] == list(range(len(events)))


async def test_system_prompt(http: httpx.AsyncClient, backend: ScriptedBackend, model: str):
    data = await create(
        http,
        {
            "model": model,
            "input": [
                message("system", "You are a pirate. Always respond in pirate speak."),
                message("user", "Say hello."),
            ],
        },
    )
    assert data["status"] == "completed"
    assert backend.requests(model)[-1]["messages"][0]["role"] == "system"


async def test_tool_calling(http: httpx.AsyncClient, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(tool_calls=[("get_weather", {"location": "San Francisco, CA"})])])
    data = await create(
        http,
        {"model": model, "tools": [WEATHER], "input": [message("user", "What's the weather like in San Francisco?")]},
    )
    assert [item["type"] for item in data["output"]] == ["function_call"]


async def test_tool_calling_streamed(http: httpx.AsyncClient, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(tool_calls=[("get_weather", {"location": "San Francisco, CA"})])])
    events, _final = await stream(
        http,
        {"model": model, "tools": [WEATHER], "input": [message("user", "What's the weather like in San Francisco?")]},
    )
    kinds = [(event["type"], (event.get("item") or {}).get("type")) for event in events]
    assert ("response.output_item.added", "function_call") in kinds
    assert ("response.output_item.done", "function_call") in kinds
    assert ("response.function_call_arguments.delta", None) in kinds
    assert ("response.function_call_arguments.done", None) in kinds


async def test_function_call_round_trip(http: httpx.AsyncClient, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(tool_calls=[("get_weather", {"location": "Oslo"})]), Reply(text="Cold.")])
    first = await create(http, {"model": model, "tools": [WEATHER], "input": "Weather in Oslo?"})
    call = first["output"][0]
    second = await create(
        http,
        {
            "model": model,
            "tools": [WEATHER],
            "previous_response_id": first["id"],
            "input": [{"type": "function_call_output", "call_id": call["call_id"], "output": "-5 C"}],
        },
    )
    assert second["status"] == "completed" and second["output"][0]["content"][0]["text"] == "Cold."


async def test_image_and_file_input(http: httpx.AsyncClient, backend: ScriptedBackend, model: str):
    data = await create(
        http,
        {
            "model": model,
            "input": [
                message(
                    "user",
                    [
                        {"type": "input_text", "text": "What do you see in this image?"},
                        {"type": "input_image", "image_url": PNG},
                        {"type": "input_file", "filename": "doc.pdf", "file_data": PDF},
                    ],
                )
            ],
        },
    )
    assert data["status"] == "completed"
    sent = backend.requests(model)[-1]["messages"][0]["content"]
    assert [part["type"] for part in sent] == ["text", "image_url", "file"]


async def test_multi_turn_and_previous_response_id(http: httpx.AsyncClient, backend: ScriptedBackend, model: str):
    data = await create(
        http,
        {
            "model": model,
            "input": [
                message("user", "My name is Alice."),
                message("assistant", "Hello Alice!"),
                message("user", "My name?"),
            ],
        },
    )
    follow_up = await create(http, {"model": model, "previous_response_id": data["id"], "input": "And again?"})
    assert follow_up["previous_response_id"] == data["id"] and follow_up["status"] == "completed"
    roles = [sent["role"] for sent in backend.requests(model)[-1]["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]


async def test_reasoning_streams_as_its_own_item(
    http: httpx.AsyncClient, backend: ScriptedBackend, model: str, sdk: openai.AsyncOpenAI
):
    backend.script(model, [Reply(text="4", reasoning="Two and two make four.", reasoning_tokens=6)] * 2)
    events, final = await stream(http, {"model": model, "input": "2+2?"})
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["output"][0]["content"] == [{"type": "reasoning_text", "text": "Two and two make four."}]
    assert final["usage"]["output_tokens_details"]["reasoning_tokens"] == 6
    deltas = "".join(event["delta"] for event in events if event["type"] == "response.reasoning_text.delta")
    assert deltas == "Two and two make four."
    done = [event for event in events if event["type"] == "response.reasoning_text.done"]
    assert [event["text"] for event in done] == ["Two and two make four."]
    whole = await sdk.responses.create(model=model, input="2+2?")
    assert whole.output[0].type == "reasoning" and whole.output[0].content[0].text == "Two and two make four."


async def test_logprobs_when_asked(http: httpx.AsyncClient, model: str):
    events, final = await stream(
        http, {"model": model, "input": "abcdefgh", "top_logprobs": 1, "include": ["message.output_text.logprobs"]}
    )
    assert final["top_logprobs"] == 1
    logprobs = final["output"][0]["content"][0]["logprobs"]
    assert "".join(entry["token"] for entry in logprobs) == "echo: abcdefgh"
    assert all(event["logprobs"] for event in events if event["type"] == "response.output_text.delta")


async def test_background_stream_announces_queued(http: httpx.AsyncClient, model: str):
    events, final = await stream(http, {"model": model, "input": "later", "background": True})
    assert [event["type"] for event in events][:2] == ["response.created", "response.queued"]
    assert final["status"] == "completed" and final["background"] is True


async def test_a_stream_that_cannot_end_sends_an_error_event(http: httpx.AsyncClient, stack: Stack, model: str):
    # A finished response whose log has no terminal event (its end was never logged).
    from store.opening import open_database
    from store.repository import ResponseRepository

    db = open_database(stack.settings.database_url)
    try:
        repository = ResponseRepository(db)
        response = Response(id=f"resp_{model}", created_at=0, status="in_progress", model=model)
        await repository.responses.create(response, [], opening_events(response))
        await repository.responses.finish(response.model_copy(update={"status": "completed"}), with_event=False)
    finally:
        await db.close()
    events = []
    async with http.stream("GET", f"/v1/responses/{response.id}", params={"stream": "true"}) as answer:
        async for line in answer.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
    for event in events:
        validate_event(event)
    last = events[-1]
    assert last["type"] == "error" and last["error"]["message"] == last["message"]
    assert openai.types.responses.ResponseErrorEvent.model_validate(last).message


def test_stored_events_frame_as_they_are():
    from http_plumbing.sse import frame

    event = StoredEvent(3, "response.output_text.delta", '{"type":"response.output_text.delta","sequence_number":3}')
    assert frame(event) == f"event: response.output_text.delta\ndata: {event.data}\n\n"
