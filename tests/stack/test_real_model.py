"""Against a real model server (llama.cpp's, serving SmolLM2-135M-Instruct: `tests/support/
real_model/`), what a real server does that the scripted one does not: its own chunking of a
stream and its usage chunk, its finish reasons, a chain it is shown whole, tool calls and
results rendered by its chat template, output its grammar holds to a JSON schema, its real
context size and the overflow error it gives past it (learned, then fitted to), and a worker
killed in the middle of one of its generations.

SmolLM2-135M does not call tools by itself (and this build of the server does not force it to
with `tool_choice: "required"`): the function round trip is the client's side of it, a
`function_call` and its `function_call_output` sent back as input, which the server renders
through its template and answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from pydantic import BaseModel

from tests.support.processes import free_port, kill, spawn_worker
from tests.support.real_model import RealModelServer, missing
from tests.support.scripted_backend import ScriptedBackend
from tests.support.stack import Stack, empty_store, running_stack
from tests.support.waiting import until_terminal

pytestmark = pytest.mark.skipif(missing() is not None, reason=missing() or "")

CONTEXT = 1024
"""Tokens a slot of the server holds: small, so that its overflow is cheap to reach."""
MODEL = "smollm2"


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RealModelServer]:
    log = tmp_path_factory.mktemp("real-model") / "server.log"
    server = RealModelServer(port=free_port(), context=CONTEXT).start(log)
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def real(
    temporal_address: str,
    backend: ScriptedBackend,
    model_server: RealModelServer,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Stack]:
    store = empty_store("sqlite", tmp_path_factory.mktemp("real-model-stack"), request)
    async with running_stack(temporal_address, backend, store, inference_base_url=model_server.base_url) as stack:
        yield stack


@pytest.fixture
async def sdk(real: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    client = real.sdk(timeout=120)
    yield client
    await client.close()


async def test_a_real_stream_its_chunks_and_its_usage(sdk: openai.AsyncOpenAI):
    events = [
        event
        async for event in await sdk.responses.create(
            model=MODEL, input="Write two sentences about the sea.", temperature=0, max_output_tokens=40, stream=True
        )
    ]
    deltas = [event.delta for event in events if event.type == "response.output_text.delta"]
    assert len(deltas) > 1, "the server streamed its reply in one piece"
    assert events[-1].type in ("response.completed", "response.incomplete")
    kept = await sdk.responses.retrieve(events[-1].response.id)
    assert kept.output_text == "".join(deltas) and kept.output_text.strip()
    assert kept.usage.output_tokens > 0 and kept.usage.input_tokens > 0
    assert kept.usage.total_tokens == kept.usage.input_tokens + kept.usage.output_tokens


async def test_its_finish_reasons(sdk: openai.AsyncOpenAI):
    cut = await sdk.responses.create(model=MODEL, input="Tell me a long story.", max_output_tokens=8, temperature=0)
    assert cut.status == "incomplete" and cut.incomplete_details.reason == "max_output_tokens"
    assert cut.usage.output_tokens == 8
    done = await sdk.responses.create(model=MODEL, input="Say yes.", max_output_tokens=200, temperature=0)
    assert done.status == "completed" and done.output_text and done.usage.output_tokens < 200


async def test_a_chain_is_shown_whole(sdk: openai.AsyncOpenAI):
    first = await sdk.responses.create(
        model=MODEL, input="My name is Ada. Remember it.", max_output_tokens=20, temperature=0
    )
    second = await sdk.responses.create(
        model=MODEL, previous_response_id=first.id, input="What is my name?", max_output_tokens=20, temperature=0
    )
    alone = await sdk.responses.create(model=MODEL, input="What is my name?", max_output_tokens=20, temperature=0)
    # The server counted the first turn (input and answer) in the second's prompt.
    assert second.usage.input_tokens >= alone.usage.input_tokens + first.usage.output_tokens
    assert second.status in ("completed", "incomplete")


async def test_a_function_round_trip_through_its_template(sdk: openai.AsyncOpenAI):
    tools = [
        {
            "type": "function",
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        }
    ]
    answered = await sdk.responses.create(
        model=MODEL,
        tools=tools,
        input=[
            {"role": "user", "content": "What is the weather in Paris?"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 degrees"},
        ],
        max_output_tokens=30,
        temperature=0,
    )
    assert answered.status in ("completed", "incomplete") and answered.output_text
    offered = await sdk.responses.create(
        model=MODEL, tools=tools, input="Weather in Rome?", max_output_tokens=30, temperature=0
    )
    assert offered.status in ("completed", "incomplete")  # offered, rendered, answered


class Person(BaseModel):
    name: str
    age: int


async def test_structured_output_holds_to_the_schema(sdk: openai.AsyncOpenAI):
    parsed = await sdk.responses.parse(
        model=MODEL, input="Describe a person.", text_format=Person, max_output_tokens=60, temperature=0
    )
    assert isinstance(parsed.output_parsed, Person)
    loose = await sdk.responses.create(
        model=MODEL,
        input="Give me a JSON object with a key `ok`.",
        text={"format": {"type": "json_object"}},
        max_output_tokens=30,
        temperature=0,
    )
    assert isinstance(json.loads(loose.output_text), dict)


async def test_its_context_size_is_learned_from_its_overflow_error(real: Stack, sdk: openai.AsyncOpenAI):
    long = "The quick brown fox jumps over the lazy dog. " * 140  # ~1,400 tokens: past one slot's 1,024
    async with real.http() as http:  # OpenAI's code, which Codex reads and the SDK's types do not list
        refused = (
            await http.post("/v1/responses", json={"model": MODEL, "input": long, "max_output_tokens": 10})
        ).json()
    assert refused["status"] == "failed" and refused["error"]["code"] == "context_length_exceeded", refused
    assert str(CONTEXT) in refused["error"]["message"]  # the server's own word for its size
    history = [
        {"role": "user" if turn % 2 == 0 else "assistant", "content": f"Turn {turn}: " + "words " * 60}
        for turn in range(24)
    ]
    fitted = await sdk.responses.create(
        model=MODEL, input=[*history, {"role": "user", "content": "Say ok."}], truncation="auto", max_output_tokens=10
    )
    assert fitted.status in ("completed", "incomplete"), fitted.error
    assert fitted.usage.input_tokens < CONTEXT


async def test_a_worker_killed_mid_generation(
    temporal_address: str,
    backend: ScriptedBackend,
    model_server: RealModelServer,
    tmp_path: Path,
    request: pytest.FixtureRequest,
):
    """The worker running a real generation is killed (-9) after its first deltas; another
    takes the turn over and the response completes once, its stream whole."""
    store = empty_store("sqlite", tmp_path, request)
    async with running_stack(
        temporal_address,
        backend,
        store,
        with_worker=False,
        task_timeout_seconds=2,
        inference_base_url=model_server.base_url,
    ) as stack:
        sdk = stack.sdk(timeout=120)
        log = tmp_path / "worker.log"
        first = spawn_worker(stack, log=log)
        second = None
        try:
            created = await sdk.responses.create(
                model=MODEL,
                input="Write a long story about a lighthouse keeper.",
                max_output_tokens=300,
                temperature=0,
                background=True,
                stream=True,
            )
            response_id, seen = None, 0
            async for event in created:
                if event.type == "response.created":
                    response_id = event.response.id
                seen += event.type == "response.output_text.delta"
                if seen >= 3:
                    break
            assert response_id is not None
            kill(first)
            second = spawn_worker(stack, log=log)
            ended = await until_terminal(sdk, response_id, seconds=120)
            assert ended.status in ("completed", "incomplete"), ended.error
            assert ended.usage.output_tokens > 0
            events = [event async for event in await sdk.responses.retrieve(response_id, stream=True, starting_after=0)]
            text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
            done = [event for event in events if event.type == "response.output_text.done"]
            assert done and done[-1].text == ended.output_text  # the final text is the stored one
            assert text.startswith(ended.output_text[:1])
            assert sum(event.type in ("response.completed", "response.incomplete") for event in events) == 1
        finally:
            kill(first)
            kill(second)
            await sdk.close()


async def test_compaction_keeps_a_chain_within_its_real_window(
    temporal_address: str,
    backend: ScriptedBackend,
    tmp_path: Path,
    request: pytest.FixtureRequest,
):
    """A server of 300 tokens a slot, compaction past 200, turns of ~100 words: every turn
    completes, its window learned from the server's own refusal and every compaction fitted to
    what the server counts."""
    small = RealModelServer(port=free_port(), context=300, slots=1).start(tmp_path / "small.log")
    try:
        store = empty_store("sqlite", tmp_path, request)
        async with running_stack(temporal_address, backend, store, inference_base_url=small.base_url) as stack:
            sdk = stack.sdk(timeout=120)
            previous = None
            for turn in range(6):
                response = await sdk.responses.create(
                    model=MODEL,
                    input=f"Turn {turn}. " + "The cat sat on a mat and then ran far away. " * 9,
                    previous_response_id=previous,
                    context_management=[{"type": "compaction", "compact_threshold": 200}],
                    max_output_tokens=20,
                    temperature=0,
                )
                assert response.status in ("completed", "incomplete"), (turn, response.error)
                previous = response.id
            await sdk.close()
    finally:
        small.stop()
