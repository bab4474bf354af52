"""Replay: workflow code must stay deterministic for histories already recorded.

`tests/histories/**.json` are histories recorded from earlier versions of the code; a change
that would break workflows running in production fails here. Record new ones with
`RECORD_HISTORIES=1 pytest tests/stack/test_replay.py` when a new kind of path is added (files
already there are kept, so they go on testing the code that recorded them).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import openai
import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle, WorkflowHistory

from tests.support.histories import (
    HISTORIES,
    baseline_in_memo,
    decoded_history,
    keep_recording,
    patches_in,
    recorded,
    replayer,
)
from tests.support.mcp_servers import McpTestServer
from tests.support.processes import free_port
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack
from tests.support.waiting import eventually, until_awaiting_approval, until_requested, until_terminal
from workflows import patches
from workflows.response import CANCEL_ARRIVAL_SECONDS


@pytest.mark.parametrize("path", recorded(), ids=lambda path: str(path.relative_to(HISTORIES).with_suffix("")))
async def test_recorded_histories_replay(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = await replayer().replay_workflow(history)
    assert result.replay_failure is None


def test_there_are_recorded_histories():
    assert len(recorded()) >= 4, "recorded histories are missing from tests/histories"


async def _scenarios(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str) -> dict[str, str]:
    backend.script(f"{model}-tools", [Reply(tool_calls=[("f", {"a": 1}), ("g", {})])])
    backend.script(f"{model}-fail", [Reply(status=400, error_message="bad")])
    backend.script(f"{model}-retry", [Reply(status=500), Reply(text="ok")])
    backend.script(f"{model}-retries", [Reply(status=503), Reply(status=429), Reply(text="ok")])
    backend.script(f"{model}-length", [Reply(text="cut", finish_reason="length")])
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}}
    tool_g = {"type": "function", "name": "g", "parameters": {"type": "object"}}
    ids = {
        "text": (await sdk.responses.create(model=model, input="hi", instructions="x")).id,
        "function_calls": (await sdk.responses.create(model=f"{model}-tools", input="hi", tools=[tool, tool_g])).id,
        "upstream_rejected": (await sdk.responses.create(model=f"{model}-fail", input="hi")).id,
        "upstream_retried": (await sdk.responses.create(model=f"{model}-retry", input="hi")).id,
        "upstream_retried_twice": (await sdk.responses.create(model=f"{model}-retries", input="hi")).id,
        "incomplete": (await sdk.responses.create(model=f"{model}-length", input="hi")).id,
        # (an unstored one's history is erased once it ends: `tests/stack/test_at_rest.py`)
    }
    first = await sdk.responses.create(model=model, input="hello " * 20)
    ids["compacted"] = (
        await sdk.responses.create(
            model=model,
            input="go on",
            previous_response_id=first.id,
            context_management=[{"type": "compaction", "compact_threshold": 10}],
        )
    ).id
    backend.limit_context(f"{model}-small", 5)
    overflowing = await sdk.responses.with_raw_response.create(model=f"{model}-small", input="hello " * 20)
    ids["context_overflow"] = overflowing.http_response.json()["id"]  # (its error code is not in the SDK's list)
    async with sdk.responses.stream(model=f"{model}-tools", input="hi", tools=[tool, tool_g]) as stream:
        ids["streamed"] = (await stream.get_final_response()).id
    background = await sdk.responses.create(model=model, input="hi", background=True)
    ids["background"] = background.id
    backend.script(f"{model}-slow", [Reply(text="never", delay=60)])
    doomed = await sdk.responses.create(model=f"{model}-slow", input="hi", background=True)
    await until_requested(backend, f"{model}-slow")
    ids["cancelled"] = (await sdk.responses.cancel(doomed.id)).id
    return ids


async def _mcp_scenarios(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, server: McpTestServer
) -> dict[str, str]:
    never = [{"type": "mcp", "server_label": "tools", "server_url": server.url, "require_approval": "never"}]
    gated = [{"type": "mcp", "server_label": "tools", "server_url": server.url}]
    backend.script(
        f"{model}-mcp",
        [
            Reply(tool_calls=[("add", {"a": 1, "b": 2}), ("weather", {"city": "Rome"})]),
            Reply(text="3, sunny"),
            Reply(tool_calls=[("delete_file", {"path": "/tmp/r"})]),
            Reply(text="deleted"),
            Reply(tool_calls=[("delete_file", {"path": "/tmp/b"})]),
            Reply(text="deleted in place"),
        ],
    )
    ids = {"mcp_calls": (await sdk.responses.create(model=f"{model}-mcp", input="go", tools=never)).id}
    asking = await sdk.responses.create(model=f"{model}-mcp", input="delete", tools=gated)
    assert asking.output[-1].type == "mcp_approval_request", asking.output
    ids["mcp_approval_requested"] = asking.id
    ids["mcp_approved_follow_up"] = (
        await sdk.responses.create(
            model=f"{model}-mcp",
            previous_response_id=asking.id,
            tools=gated,
            input=[{"type": "mcp_approval_response", "approval_request_id": asking.output[-1].id, "approve": True}],
        )
    ).id
    waiting = await sdk.responses.create(model=f"{model}-mcp", input="delete", tools=gated, background=True)
    current = await until_awaiting_approval(sdk, waiting.id)
    async with stack.http() as http:
        decided = await http.post(
            f"/v1/responses/{waiting.id}/approvals",
            json={"approval_request_id": current.output[-1].id, "approve": True},
        )
        assert decided.status_code == 200
    ids["mcp_background_approval"] = waiting.id
    unreachable = [{"type": "mcp", "server_label": "gone", "server_url": f"http://127.0.0.1:{free_port()}/mcp"}]
    ids["mcp_list_failed"] = (await sdk.responses.create(model=model, input="hi", tools=unreachable)).id
    # Items too large for history travel as stubs: a long reply, a long tool result.
    backend.script(f"{model}-large", [Reply(tool_calls=[("big", {"size": 100_000})]), Reply(text="y" * 100_000)])
    ids["mcp_parked_items"] = (await sdk.responses.create(model=f"{model}-large", input="big", tools=never)).id
    # A cancel while a tool call runs waits for the call to stop.
    backend.script(f"{model}-slow-tool", [Reply(tool_calls=[("slow", {"seconds": 30})]), Reply(text="never")])
    calls_before = len(server.calls_of("slow"))  # the server is the session's: count this run's calls
    slow = await sdk.responses.create(model=f"{model}-slow-tool", input="slow", tools=never, background=True)
    await eventually(lambda: len(server.calls_of("slow")) > calls_before, "the slow tool call to start")
    ids["mcp_call_cancelled"] = (await sdk.responses.cancel(slow.id)).id
    # A call that may have run and is not repeated: its outcome is unknown.
    failing = McpTestServer(fail_after_running={"delete_file"}).start()
    try:
        backend.script(
            f"{model}-unknown", [Reply(tool_calls=[("delete_file", {"path": "/tmp/u"})]), Reply(text="I will check")]
        )
        ids["mcp_call_outcome_unknown"] = (
            await sdk.responses.create(
                model=f"{model}-unknown",
                input="delete",
                tools=[
                    {"type": "mcp", "server_label": "tools", "server_url": failing.url, "require_approval": "never"}
                ],
            )
        ).id
    finally:
        failing.stop()
    return ids


async def test_fresh_histories_replay(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(f"{model}-tools", [Reply(tool_calls=[("f", {"a": 1})])])  # for the streamed one
    ids = await _scenarios(sdk, backend, model) | await _mcp_scenarios(stack, sdk, backend, model, mcp_server)
    for name, response_id in ids.items():
        handle = stack.client.get_workflow_handle(response_id)
        try:
            await handle.result()
        except WorkflowFailureError:  # a failed or cancelled response's workflow ends so
            pass
        status = (await handle.describe()).status
        ended = await handle.query("state")  # unstored ones are not retrievable; queries replay
        # Temporal's status tells the response's end.
        assert status == {"failed": WorkflowExecutionStatus.FAILED, "cancelled": WorkflowExecutionStatus.CANCELED}.get(
            ended, WorkflowExecutionStatus.COMPLETED
        ), (name, ended, status)
        history = await handle.fetch_history()
        failed_tasks = [
            event.workflow_task_failed_event_attributes.cause
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        ]
        # No workflow task fails (red in the UI), a cancel's end included.
        assert failed_tasks == [], (name, failed_tasks)
        result = await replayer().replay_workflow(history)
        assert result.replay_failure is None, name
        # Kept decoded: the tests' key is new each run (payloads in clear replay with any key).
        await keep_recording(name, stack.client, response_id)


async def cancel_taken(handle: WorkflowHandle) -> bool:
    """Whether a workflow task completed after the workflow's cancel request."""
    requested = False
    async for event in handle.fetch_history_events():
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED:
            requested = True
        elif requested and event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
            return True
    return False


async def test_both_orders_of_a_cancel_are_recorded_and_replay(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    """A client's cancel reaches a response twice: as a row in the store (which a running call
    watches) and as Temporal's cancel request. Each order takes its own patched branch."""
    # Only the store's: the model call stops, and the workflow waits a moment for Temporal's.
    backend.script(f"{model}-slow", [Reply(text="never", delay=60)])
    by_store = await sdk.responses.create(model=f"{model}-slow", input="hi", background=True)
    await until_requested(backend, f"{model}-slow")
    await stack.repository.cancels.request(by_store.id)
    assert (await until_terminal(sdk, by_store.id)).status == "cancelled"
    # Temporal's first, while a tool call runs: the call stops on the store's, nothing waits.
    backend.script(f"{model}-slow-tool", [Reply(tool_calls=[("slow", {"seconds": 30})]), Reply(text="never")])
    never = [{"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "never"}]
    calls_before = len(mcp_server.calls_of("slow"))
    by_temporal = await sdk.responses.create(model=f"{model}-slow-tool", input="slow", tools=never, background=True)
    await eventually(lambda: len(mcp_server.calls_of("slow")) > calls_before, "the slow tool call to start")
    handle = stack.client.get_workflow_handle(by_temporal.id)
    await handle.cancel()
    # The store's cancel only once the workflow has taken Temporal's (a workflow task completed
    # after the request): sent at once, it could stop the call first, and take the other branch.
    await eventually(lambda: cancel_taken(handle), "the workflow to take Temporal's cancel request")
    await stack.repository.cancels.request(by_temporal.id)
    assert (await until_terminal(sdk, by_temporal.id)).status == "cancelled"
    for name, response_id, waits in [
        ("cancelled_in_the_store", by_store.id, True),
        ("cancelled_by_temporal_first", by_temporal.id, False),
    ]:
        history = await decoded_history(stack.client, response_id)
        # Each took its patched branch: under the baseline (in its memo, with no marker) it
        # shows as what the branch does, the wait for Temporal's cancel or none.
        assert baseline_in_memo(history) == patches.BASELINE_2026_11_27_2, name
        assert not patches_in(history), (name, patches_in(history))
        assert _waited_for_temporal_cancel(history) == waits, name
        assert (await replayer().replay_workflow(history)).replay_failure is None, name
        await keep_recording(name, stack.client, response_id)


def _waited_for_temporal_cancel(history: WorkflowHistory) -> bool:
    """Whether the response waited for Temporal's cancel request (`CANCEL_ARRIVAL_SECONDS`)."""
    return any(
        event.event_type == EventType.EVENT_TYPE_TIMER_STARTED
        and event.timer_started_event_attributes.start_to_fire_timeout.ToTimedelta()
        == timedelta(seconds=CANCEL_ARRIVAL_SECONDS)
        for event in history.events
    )
