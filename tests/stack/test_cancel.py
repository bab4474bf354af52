"""Cancel: any in-progress response, promptly, wherever it waits; twice is harmless.

The stacks here use a workflow task timeout of a minute, so a cancel that waited for
Temporal to hand the workflow its cancel request (at the next workflow-task heartbeat,
~48 s) would outlast the client's 20 s timeout: only the prompt path passes.
"""

from __future__ import annotations

import asyncio
import contextlib

import openai
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError

from tests.support.mcp_servers import McpTestServer
from tests.support.processes import kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack
from tests.support.waiting import eventually, until_requested

SLOW = 120  # seconds the backend would take: far beyond every timeout here


@pytest.fixture
async def patient_stack(temporal_address: str, backend: ScriptedBackend, store: EmptyStore):
    async with running_stack(temporal_address, backend, store, task_timeout_seconds=60) as stack:
        yield stack


async def test_cancel_a_background_response_mid_inference(patient_stack: Stack, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(text="too late", delay=SLOW)])
    async with patient_stack.sdk(timeout=20) as client:
        created = await client.responses.create(model=model, input="slow", background=True)
        assert created.status == "queued"
        await until_requested(backend, model)
        cancelled = await client.responses.cancel(created.id)
        assert cancelled.status == "cancelled" and cancelled.output == []
        assert (await client.responses.retrieve(created.id)).status == "cancelled"
        again = await client.responses.cancel(created.id)  # harmless: the same cancelled response
        assert again.status == "cancelled" and again.id == created.id
        events = [event async for event in await client.responses.retrieve(created.id, stream=True)]
    assert [event.type for event in events] == [
        "response.created",
        "response.queued",
        "response.in_progress",
        "response.failed",
    ]
    assert events[-1].response.status == "cancelled"


async def test_cancel_a_synchronous_response_answers_its_waiting_client(
    patient_stack: Stack, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="too late", delay=SLOW)])
    async with patient_stack.sdk(timeout=20) as client:
        waiting = asyncio.create_task(client.responses.create(model=model, input="slow"))
        await until_requested(backend, model)
        async with patient_stack.http() as http:
            listed = (await http.get("/v1/responses", params={"limit": 1})).json()["data"]
        response_id = listed[0]["id"]
        assert listed[0]["status"] == "in_progress"
        cancelled = await client.responses.cancel(response_id)
        answered = await waiting
    assert cancelled.status == answered.status == "cancelled"
    assert answered.id == response_id


async def test_cancel_a_stream_ends_it_with_the_cancelled_response(
    patient_stack: Stack, backend: ScriptedBackend, model: str
):
    text = " ".join(f"word{index}" for index in range(200))
    backend.script(model, [Reply(text=text, chunk_delay=0.05)])
    async with patient_stack.sdk(timeout=20) as client:
        events = []
        async for event in await client.responses.create(model=model, input="long", stream=True):
            events.append(event)
            if sum(e.type == "response.output_text.delta" for e in events) == 5:
                await client.responses.cancel(events[0].response.id)
        stored = await client.responses.retrieve(events[0].response.id)
    assert events[-1].type == "response.failed" and events[-1].response.status == "cancelled"
    assert stored.status == "cancelled"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    streamed = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert 0 < len(streamed) < len(text)


async def test_cancel_during_a_retry_backoff(patient_stack: Stack, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(status=429, headers={"retry-after": str(SLOW)}), Reply(text="too late")])
    async with patient_stack.sdk(timeout=20) as client:
        created = await client.responses.create(model=model, input="hi", background=True)
        await until_requested(backend, model)
        await asyncio.sleep(0.3)  # the failed attempt is over: the workflow waits out the backoff
        cancelled = await client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    assert len(backend.requests(model)) == 1


async def test_cancel_reaches_a_worker_in_another_process(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    backend.script(model, [Reply(text="too late", delay=SLOW)])
    async with running_stack(temporal_address, backend, store, with_worker=False, task_timeout_seconds=60) as stack:
        worker = spawn_worker(stack)
        try:
            async with stack.sdk(timeout=20) as client:
                created = await client.responses.create(model=model, input="slow", background=True)
                await until_requested(backend, model)
                cancelled = await client.responses.cancel(created.id)
        finally:
            kill(worker)
    assert cancelled.status == "cancelled"


async def test_finished_responses_cannot_be_cancelled(sdk: openai.AsyncOpenAI, model: str):
    done = await sdk.responses.create(model=model, input="quick")
    with pytest.raises(openai.ConflictError, match="already completed"):
        await sdk.responses.cancel(done.id)
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.cancel("resp_does_not_exist")


@pytest.mark.one_store
@pytest.mark.parametrize("where", ["model_call", "tool_call"])
async def test_no_cancel_leaves_a_failed_workflow_task(
    stack: Stack, backend: ScriptedBackend, mcp_server: McpTestServer, model: str, where: str
):
    """Cancels at many moments of a model call, or of a running tool call: each response's
    workflow ends Canceled with no failed workflow task (red in the Temporal UI) in its
    history, and promptly: it never waits out a timer once Temporal's cancel has come (told by
    the order of its history's events, not by the clock: on a loaded machine Temporal's cancel
    may come late, and the wait for it then rightly runs out)."""
    never = [{"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "never"}]
    delays = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.8]
    async with stack.sdk(timeout=30) as client:

        async def cancelled_after(index: int, delay: float) -> tuple[str, float]:
            # One model per response; a tool call is told apart by its arguments.
            seconds = 30 + index / 100
            if where == "model_call":
                backend.script(f"{model}-{index}", [Reply(text="slow " * 200, chunk_delay=0.01)])
            else:
                backend.script(f"{model}-{index}", [Reply(tool_calls=[("slow", {"seconds": seconds})])])
            created = await client.responses.create(
                model=f"{model}-{index}", input="go", background=True, tools=never if where == "tool_call" else []
            )
            if where == "tool_call":
                await eventually(lambda: {"seconds": seconds} in mcp_server.calls_of("slow"), "the call to start")
            await asyncio.sleep(delay)
            await client.responses.cancel(created.id)
            with contextlib.suppress(WorkflowFailureError):
                await stack.client.get_workflow_handle(created.id).result()
            return created.id

        ended = await asyncio.gather(*(cancelled_after(index, delay) for index, delay in enumerate(delays)))
    for response_id in ended:
        handle = stack.client.get_workflow_handle(response_id)
        assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
        events = (await handle.fetch_history()).events
        failed = [
            event.workflow_task_failed_event_attributes.cause
            for event in events
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
        assert failed == [], (response_id, failed)
        kinds = [event.event_type for event in events]
        cancel_came = kinds.index(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED)
        fired_after = [
            index
            for index, kind in enumerate(kinds)
            if kind == EventType.EVENT_TYPE_TIMER_FIRED and index > cancel_came
        ]
        assert fired_after == [], f"{response_id} waited out a timer after Temporal's cancel had come"
