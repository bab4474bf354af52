"""Background mode: `queued` at once, progress visible while it runs, a stream to rejoin."""

from __future__ import annotations

import openai

from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack
from tests.support.waiting import eventually, until_terminal

TEXT = " ".join(f"word{index}" for index in range(60))


async def test_background_response_shows_its_output_so_far(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text=TEXT, chunk_delay=0.01)])
    created = await sdk.responses.create(model=model, input="long", background=True)
    assert created.status == "queued" and created.background is True and created.output == []
    partial_texts = []

    async def ended():  # noqa: ANN202
        seen = await sdk.responses.retrieve(created.id)
        if seen.status in ("queued", "in_progress"):
            if seen.output:
                partial_texts.append(seen.output_text)
            return None
        return seen

    seen = await eventually(ended, f"background response {created.id} to end")
    assert seen.status == "completed" and seen.output_text == TEXT
    partial = [text for text in partial_texts if text != TEXT]
    assert partial, "no GET saw the response part-way"
    assert all(TEXT.startswith(text) for text in partial_texts)
    assert [len(text) for text in partial_texts] == sorted(len(text) for text in partial_texts)


async def test_background_stream_rejoined_with_starting_after_sees_every_event_once(
    stack: Stack, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text=TEXT, chunk_delay=0.02)])
    async with stack.sdk(timeout=30) as client:
        first = []
        async for event in await client.responses.create(model=model, input="long", background=True, stream=True):
            first.append(event)
            if len(first) == 8:
                break  # the client goes away; the response goes on
        response_id = first[0].response.id
        assert [event.type for event in first[:3]] == ["response.created", "response.queued", "response.in_progress"]
        rest = [
            event
            async for event in await client.responses.retrieve(
                response_id, stream=True, starting_after=first[-1].sequence_number
            )
        ]
        stored = await client.responses.retrieve(response_id)
    events = first + rest
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    assert "".join(event.delta for event in events if event.type == "response.output_text.delta") == TEXT
    assert events[-1].response.output_text == stored.output_text == TEXT


async def test_background_chain_and_function_calls(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(tool_calls=[("lookup", {"q": "fox"})]), Reply(text="found it")])
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    first = await sdk.responses.create(model=model, input="find", tools=[tool], background=True)
    first = await until_terminal(sdk, first.id)
    call = first.output[-1]
    assert first.status == "completed" and call.type == "function_call" and call.arguments == '{"q": "fox"}'
    second = await sdk.responses.create(
        model=model,
        previous_response_id=first.id,
        background=True,
        tools=[tool],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "a fox"}],
    )
    second = await until_terminal(sdk, second.id)
    assert second.output_text == "found it"
    assert backend.requests(model)[1]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": call.call_id,
        "content": "a fox",
    }
