"""A first turn's call writes the end of a response its answer ends
(`workflows/response_end.py`): the response it writes is the one the workflow's own last
step writes for the same answer, and its workflow holds one local activity, the call."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.support.histories import decoded_history
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack
from tests.support.waiting import until_terminal

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}

ANSWERS = {
    "text": Reply(text="The whole answer.", usage=(9, 4)),
    "cut_short": Reply(text="A long answer that was cut", finish_reason="length", usage=(9, 7)),
    "function_call": Reply(tool_calls=[("get_weather", {"city": "Paris"})], usage=(20, 6)),
}

APART = {"id", "created_at", "completed_at", "background"}
"""What differs between two responses to the same request by design: who, when, and how run."""


def _comparable(response: openai.types.responses.Response) -> dict[str, Any]:
    shown = response.model_dump(mode="json", exclude=APART)
    for item in shown["output"]:
        item.pop("id", None)  # each answer's items get ids of their own
        item.pop("call_id", None)
    return shown


async def _ended_workflow(stack: Stack, response_id: str) -> Any:
    """The response's workflow history once it has ended (the client may have the end first:
    its call wrote it)."""
    await stack.client.get_workflow_handle(response_id).result()
    return await decoded_history(stack.client, response_id)


def _local_activities(history: Any) -> list[str]:
    """The local activities a (decoded) history ran, by type, in order."""
    types = []
    for event in history.events:
        if event.HasField("marker_recorded_event_attributes"):
            details = event.marker_recorded_event_attributes.details
            if "data" in details:
                types.append(json.loads(details["data"].payloads[0].data)["activity_type"])
    return types


@pytest.mark.parametrize("answer", sorted(ANSWERS))
async def test_the_end_a_first_call_writes_is_the_one_the_workflow_writes(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, stack: Stack, model: str, answer: str
):
    """The same answer, in the foreground (its call writes the end) and in the background (the
    workflow writes it, after the status a background response records first): the same
    response, but for its id, its times and its `background`."""
    tools = [WEATHER_TOOL] if answer == "function_call" else []
    backend.script(model, [ANSWERS[answer], ANSWERS[answer]])
    ended_by_the_call = await sdk.responses.create(model=model, input="Hi", tools=tools)
    started = await sdk.responses.create(model=model, input="Hi", tools=tools, background=True)
    ended_by_the_workflow = await until_terminal(sdk, started.id)
    assert ended_by_the_call.status == ("incomplete" if answer == "cut_short" else "completed")
    assert (ended_by_the_call.completed_at is not None) == (answer != "cut_short")
    retrieved = await sdk.responses.retrieve(ended_by_the_call.id)
    assert _comparable(retrieved) == _comparable(ended_by_the_call) == _comparable(ended_by_the_workflow)

    assert _local_activities(await _ended_workflow(stack, ended_by_the_call.id)) == ["run_inference"]
    assert _local_activities(await _ended_workflow(stack, started.id)) == [
        "record_status",
        "run_inference",
        "finalize_response",
    ]


async def test_a_streamed_end_written_by_the_call_is_sent_once_and_whole(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, stack: Stack, model: str
):
    backend.script(model, [Reply(text="Streamed and ended by its call.", usage=(5, 6))])
    events = [event async for event in await sdk.responses.create(model=model, input="Hi", stream=True)]
    terminal = [event for event in events if event.type in ("response.completed", "response.incomplete")]
    assert [event.type for event in terminal] == ["response.completed"]
    assert events[-1] is terminal[0]
    ended = terminal[0].response
    assert ended.output_text == "Streamed and ended by its call."
    assert _comparable(await sdk.responses.retrieve(ended.id)) == _comparable(ended)
    assert _local_activities(await _ended_workflow(stack, ended.id)) == ["run_inference"]
