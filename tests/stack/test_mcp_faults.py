"""MCP under faults: a long tool call outlives its killed worker, a background response
waiting for an approval outlives its killed worker, and a hung MCP server ends its call by
heartbeat timeout instead of holding the response forever."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from temporalio.api.enums.v1 import EventType

from activities.mcp import IDEMPOTENCY_KEY
from models.visibility import RESPONSE_STATE
from tests.support.mcp_servers import McpTestServer
from tests.support.processes import kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack
from tests.support.waiting import eventually, until_awaiting_approval, until_terminal


def tools(server: McpTestServer, require_approval: object = "never") -> list[dict]:
    return [{"type": "mcp", "server_label": "tools", "server_url": server.url, "require_approval": require_approval}]


async def test_a_long_read_only_call_outlives_a_killed_worker_and_runs_again(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    server = McpTestServer().start()
    backend.script(model, [Reply(tool_calls=[("slow", {"seconds": 4})]), Reply(text="the long job is done")])
    try:
        final = await _kill_the_worker_mid_call(temporal_address, backend, store, model, server, "slow")
    finally:
        server.stop()
    assert final.status == "completed" and final.output_text == "the long job is done"
    call = final.output[1]
    assert call.type == "mcp_call" and call.status == "completed" and call.output == "done after 4 s"
    # Read-only: the attempt on the dead worker was abandoned by heartbeat timeout and run again.
    assert len(server.calls_of("slow")) == 2
    # Each attempt carried the call's id as its idempotency key.
    assert [meta.get(IDEMPOTENCY_KEY) for meta in server.call_metas] == [call.id, call.id]


async def test_a_destructive_call_cut_off_by_a_killed_worker_is_not_run_again(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    server = McpTestServer().start()
    path = f"/tmp/{model}"
    backend.script(
        model,
        [
            Reply(tool_calls=[("slow_delete", {"path": path, "seconds": 4})]),
            Reply(text="I will check whether it was deleted"),
        ],
    )
    try:
        final = await _kill_the_worker_mid_call(temporal_address, backend, store, model, server, "slow_delete")
        await asyncio.sleep(1)  # time enough for a repeat to show
    finally:
        server.stop()
    assert server.calls_of("slow_delete") == [{"path": path, "seconds": 4}], "the call ran again"
    assert final.status == "completed" and final.output_text == "I will check whether it was deleted"
    call = final.output[1]
    assert call.type == "mcp_call" and call.status == "failed" and call.output is None
    assert call.error.type == "http_error" and "outcome of 'slow_delete'" in call.error.message
    assert "is unknown" in call.error.message and "not run again" in call.error.message
    told = backend.requests(model)[1]["messages"][-1]
    assert told["role"] == "tool" and "is unknown" in told["content"], "the model was not told"


async def _kill_the_worker_mid_call(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    model: str,
    server: McpTestServer,
    tool_name: str,
) -> Any:
    """Start a background response whose tool call takes 4 s, kill -9 its worker once the call
    reached the server, start another, and wait for the response's end."""
    async with running_stack(temporal_address, backend, store, with_worker=False, task_timeout_seconds=2) as stack:
        first, second = spawn_worker(stack), None
        try:
            async with stack.sdk(timeout=60) as client:
                created = await client.responses.create(
                    model=model, input="run it", tools=tools(server), background=True
                )
                await eventually(lambda: len(server.calls_of(tool_name)) == 1, f"'{tool_name}' to be called")
                kill(first)
                second = spawn_worker(stack)
                return await until_terminal(client, created.id)
        finally:
            kill(first)
            kill(second)


@pytest.mark.one_store  # the retry rule's, not the store's (the kill proofs run on both)
@pytest.mark.parametrize(
    ("tool_name", "arguments", "runs"),
    [
        ("delete_file", {"path": "/tmp/once"}, 1),  # unannotated: may change the world
        ("add", {"a": 1, "b": 2}, 2),  # read-only: retried while attempts last (2 in these tests)
    ],
)
async def test_a_failure_after_the_tool_ran_repeats_only_a_repeatable_tool(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, tool_name: str, arguments: dict, runs: int
):
    server = McpTestServer(fail_after_running={tool_name}).start()
    backend.script(model, [Reply(tool_calls=[(tool_name, arguments)]), Reply(text="noted")])
    try:
        async with asyncio.timeout(60):
            response = await sdk.responses.create(model=model, input="go", tools=tools(server))
    finally:
        server.stop()
    assert server.calls_of(tool_name) == [arguments] * runs
    call = response.output[1]
    assert response.status == "completed" and call.status == "failed" and call.error.code == 502
    assert "HTTP 502" in call.error.message
    assert ("is unknown" in call.error.message) == (runs == 1)


@pytest.mark.parametrize("decided", ["once the next worker runs", "while no worker runs"])
async def test_a_background_response_waiting_for_approval_outlives_a_killed_worker(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    model: str,
    mcp_server: McpTestServer,
    decided: str,
):
    """`while no worker runs`: the decision reaches Temporal while the response's worker is
    dead; the next worker gets it together with the whole history to replay, and must take it
    once its replay has come back to the wait, not judge it against the state before replay."""
    path = f"/tmp/{model}"
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": path})]), Reply(text="deleted after the crash")])
    async with running_stack(temporal_address, backend, store, with_worker=False, task_timeout_seconds=2) as stack:
        first, second = spawn_worker(stack), None
        try:
            async with stack.sdk(timeout=60) as client, stack.http() as http:
                created = await client.responses.create(
                    model=model, input="delete", background=True, tools=tools(mcp_server, "always")
                )
                request = (await until_awaiting_approval(client, created.id)).output[-1]
                await _wait_in_history(stack, created.id)
                kill(first)

                def decide() -> asyncio.Task:
                    return asyncio.create_task(
                        http.post(
                            f"/v1/responses/{created.id}/approvals",
                            json={"approval_request_id": request.id, "approve": True},
                        )
                    )

                if decided == "while no worker runs":
                    deciding = decide()
                    await asyncio.sleep(1)
                    assert not deciding.done(), "a decision was taken with no worker running"
                    second = spawn_worker(stack)
                else:
                    second = spawn_worker(stack)
                    deciding = decide()
                answer = await deciding
                final = await until_terminal(client, created.id)
                assert answer.status_code == 200, await _story(stack, created.id, answer.text, final)
        finally:
            kill(first)
            kill(second)
    assert final.status == "completed" and final.output_text == "deleted after the crash"
    assert final.output[2].approval_request_id == request.id and final.output[2].output == f"deleted {path}"
    assert mcp_server.calls_of("delete_file").count({"path": path}) == 1


async def test_a_hung_mcp_server_ends_the_call_by_heartbeat_timeout(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    server = McpTestServer().start()
    backend.script(model, [Reply(tool_calls=[("hang", {"seconds": 15})]), Reply(text="the tool server is stuck")])
    try:
        async with asyncio.timeout(60):
            response = await sdk.responses.create(model=model, input="go", tools=tools(server))
    finally:
        server.stop()
    call = response.output[1]
    assert call.type == "mcp_call" and call.status == "failed" and call.output is None
    assert call.error.type == "http_error" and call.error.code == 504
    assert "stopped responding" in call.error.message and "heartbeat" in call.error.message
    assert response.status == "completed" and response.output_text == "the tool server is stuck"
    assert "stopped responding" in backend.requests(model)[1]["messages"][-1]["content"]


async def test_cancel_stops_a_running_tool_call_and_an_approval_wait(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("slow", {"seconds": 60})])])
    calling = await sdk.responses.create(model=model, input="go", tools=tools(mcp_server), background=True)
    await eventually(lambda: {"seconds": 60} in mcp_server.calls_of("slow"), "the 60 s call to start")
    cancelled = await sdk.responses.cancel(calling.id)
    assert cancelled.status == "cancelled"
    assert (await sdk.responses.retrieve(calling.id)).status == "cancelled"

    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/never"})])])
    waiting = await sdk.responses.create(
        model=model, input="delete", tools=tools(mcp_server, "always"), background=True
    )
    await until_awaiting_approval(sdk, waiting.id)
    assert (await sdk.responses.cancel(waiting.id)).status == "cancelled"
    assert {"path": "/tmp/never"} not in mcp_server.calls_of("delete_file")


async def _wait_in_history(stack: Stack, response_id: str) -> None:
    """Until the workflow's wait for the approval is in its history (its `ResponseState` is
    upserted by the workflow task that begins the wait). The output shows the request as soon
    as the model call writes its events, before that task completes: a worker killed in
    between takes the task's work with it, and the next worker asks the model again (in this
    test's script, for the answer meant for after the approval)."""
    handle = stack.client.get_workflow_handle(response_id)

    async def waiting() -> bool:
        return (await handle.describe()).typed_search_attributes.get(RESPONSE_STATE) == "awaiting_approval"

    await eventually(waiting, f"the wait of {response_id} for its approval to be in its history")


async def _story(stack: Stack, response_id: str, answer: str, final: Any) -> str:
    """What a refused decision needs to be understood: the answer, the response's end, and
    its workflow's history (each event's type and time, the worker that started each task,
    the id of each update taken)."""
    lines = [answer, f"final: {final.status} {[item.type for item in final.output]}"]
    async for event in stack.client.get_workflow_handle(response_id).fetch_history_events():
        kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
        detail = ""
        if event.HasField("workflow_task_started_event_attributes"):
            detail = event.workflow_task_started_event_attributes.identity
        elif event.HasField("workflow_execution_update_accepted_event_attributes"):
            detail = event.workflow_execution_update_accepted_event_attributes.accepted_request.meta.update_id
        lines.append(f"{event.event_id} {event.event_time.ToDatetime():%H:%M:%S.%f} {kind} {detail}".rstrip())
    return "\n".join(lines)
