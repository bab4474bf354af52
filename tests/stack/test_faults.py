"""Faults survived: a worker killed mid-inference, an API server killed under a streaming
client, and an upstream that drops connections before it recovers. Each kills or breaks
a real process or connection; the whole `dev` stack killed is in `test_dev_cli.py`."""

from __future__ import annotations

import asyncio

import openai
import pytest

from tests.support.processes import kill, spawn_api, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack
from tests.support.waiting import until_requested, until_terminal

TEXT = " ".join(f"word{index}" for index in range(80))


@pytest.mark.parametrize("background", [True, False], ids=["background", "synchronous"])
async def test_worker_killed_during_inference_the_response_completes_on_the_next(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str, background: bool
):
    backend.script(model, [Reply(text="lost with the worker", delay=30), Reply(text="answered by the next worker")])
    async with running_stack(temporal_address, backend, store, with_worker=False, task_timeout_seconds=2) as stack:
        first, second = spawn_worker(stack), None
        try:
            async with stack.sdk(timeout=60) as client:
                creating = asyncio.create_task(client.responses.create(model=model, input="hi", background=background))
                await until_requested(backend, model)
                kill(first)
                second = spawn_worker(stack)
                created = await creating
                final = await until_terminal(client, created.id)
        finally:
            kill(first)
            kill(second)
    assert final.status == "completed" and final.output_text == "answered by the next worker"
    if not background:
        assert created.output_text == final.output_text  # the waiting client got the answer itself
    assert len(backend.requests(model)) == 2


async def test_api_killed_while_a_client_streams_the_client_resumes_on_another(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    """The API process A began the response's first turn itself (`activities/early_calls.py`),
    so its death takes the call along: the worker makes it again once the call's claim lapses,
    and the stream goes on from where the log left it.

    The worker starts once A's first delta has reached the client: whoever claims a turn first
    makes its call, and a worker already running can claim it before A's early call does on a
    busy machine (then A's death takes nothing along, and there is nothing to prove)."""
    backend.script(model, [Reply(text=TEXT, chunk_delay=0.03), Reply(text=TEXT, chunk_delay=0.03)])
    async with running_stack(temporal_address, backend, store, with_worker=False) as stack:  # API "B"
        api_a, url_a = spawn_api(stack)
        worker = None
        events = []
        broken = None
        try:
            async with openai.AsyncOpenAI(
                base_url=url_a, api_key="test", max_retries=0, _strict_response_validation=True
            ) as client_a:
                try:
                    async for event in await client_a.responses.create(model=model, input="long", stream=True):
                        events.append(event)
                        deltas = sum(e.type == "response.output_text.delta" for e in events)
                        if deltas == 1 and worker is None:
                            worker = spawn_worker(stack)  # the turn is A's now; the worker finds it claimed
                        elif deltas == 5:
                            kill(api_a)
                except Exception as error:  # noqa: BLE001 - whatever the dead server's socket raises
                    broken = error
            assert broken is not None, "the stream outlived its server"
            assert events[-1].type != "response.completed"
            async with stack.sdk(timeout=30) as client_b:
                rest = [
                    event
                    async for event in await client_b.responses.retrieve(
                        events[0].response.id, stream=True, starting_after=events[-1].sequence_number
                    )
                ]
                stored = await client_b.responses.retrieve(events[0].response.id)
        finally:
            kill(api_a)
            kill(worker)
    everything = events + rest
    assert [event.sequence_number for event in everything] == list(range(len(everything)))
    assert "".join(event.delta for event in everything if event.type == "response.output_text.delta") == TEXT
    assert everything[-1].type == "response.completed" and stored.output_text == TEXT
    assert len(backend.requests(model)) == 2, "the call that died with A was made again, once"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_upstream_connection_reset_then_recovery(stack, backend: ScriptedBackend, model: str, stream: bool):
    backend.script(model, [Reply(text=TEXT, cut_after_chunks=3), Reply(status=500), Reply(text=TEXT)])
    async with stack.sdk(timeout=30) as client:
        if stream:
            events = [event async for event in await client.responses.create(model=model, input="hi", stream=True)]
            final = events[-1].response
            deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
            assert deltas == TEXT
        else:
            final = await client.responses.create(model=model, input="hi")
    assert final.status == "completed" and final.output_text == TEXT
    assert len(backend.requests(model)) == 3
