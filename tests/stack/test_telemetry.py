"""What an operator sees: Prometheus metrics that move when responses run, an access log
line per request (a refused one with its error code), expected events as one calm line, JSON
logs on request, and no user text in any log above DEBUG."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import defaultdict
from pathlib import Path

import httpx
import openai
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError

from models.visibility import PREVIOUS_RESPONSE_ID, RESPONSE_MODEL, RESPONSE_STATE
from tests.support import store_probe
from tests.support.dev_stack import DevStack
from tests.support.mcp_servers import McpTestServer
from tests.support.prometheus import moved, scrape, total
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack
from tests.support.waiting import eventually, until_awaiting_approval, until_terminal


async def test_metrics_move_when_responses_run(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    base = stack.base_url.removesuffix("/v1")
    before = await scrape(base)
    # A stream, and a background response that lists tools, waits for approval and calls one.
    backend.script(
        model,
        [
            Reply(text="streamed", usage=(7, 3)),
            Reply(tool_calls=[("delete_file", {"path": f"/tmp/{model}"})]),
            Reply(text="done"),
        ],
    )
    stream = await sdk.responses.create(model=model, input="hi", stream=True)
    assert [event async for event in stream][-1].type == "response.completed"
    tool = {"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "always"}
    waiting = await sdk.responses.create(model=model, input="go", tools=[tool], background=True)
    request = (await until_awaiting_approval(sdk, waiting.id)).output[-1]
    url = stack.settings.database_url
    await eventually(
        lambda: store_probe.value(url, "SELECT COUNT(*) FROM approval_waits WHERE response_id = :id", id=waiting.id),
        "the wait to be recorded",
    )
    assert total(await scrape(base), "durable_responses_approvals_waiting") >= 1
    async with stack.http() as http:
        decided = await http.post(
            f"/v1/responses/{waiting.id}/approvals", json={"approval_request_id": request.id, "approve": True}
        )
        assert decided.status_code == 200, decided.text
        refused = await http.post("/v1/responses", json={"model": model, "input": "x", "temperature": 9})
        assert refused.status_code == 400
    assert (await until_terminal(sdk, waiting.id)).status == "completed"
    after = await scrape(base)

    prefix = "durable_responses_"
    assert moved(before, after, prefix + "http_requests_total", method="POST", route="/v1/responses", status="200") >= 2
    assert moved(before, after, prefix + "http_requests_total", method="POST", route="/v1/responses", status="400") == 1
    assert moved(before, after, prefix + "http_requests_total", route="/v1/responses/{response_id}/approvals") == 1
    assert moved(before, after, prefix + "http_request_duration_seconds_count", route="/v1/responses") >= 3
    assert moved(before, after, prefix + "responses_created_total", mode="stream") == 1
    assert moved(before, after, prefix + "responses_created_total", mode="background") == 1
    assert moved(before, after, prefix + "responses_ended_total", status="completed") >= 2
    assert moved(before, after, prefix + "first_delta_seconds_count") == 1
    # The stream's events written while it was open: at least the delta, the item's end and
    # the response's (each timed from its write to the event log).
    assert moved(before, after, prefix + "stream_event_lag_seconds_count") >= 3
    assert moved(before, after, prefix + "stream_event_lag_seconds_sum") < 5
    assert moved(before, after, prefix + "inference_duration_seconds_count", outcome="ok") >= 3
    assert moved(before, after, prefix + "inference_tokens_total", direction="input") >= 7
    assert moved(before, after, prefix + "mcp_call_duration_seconds_count", operation="list", outcome="ok") >= 1
    assert moved(before, after, prefix + "mcp_call_duration_seconds_count", operation="call", outcome="ok") == 1
    assert moved(before, after, prefix + "approval_decisions_total", decision="approve") == 1
    assert moved(before, after, prefix + "approval_wait_seconds_count") == 1
    assert (
        await store_probe.value(url, "SELECT COUNT(*) FROM approval_waits WHERE response_id = :id", id=waiting.id) == 0
    )

    # Temporal's SDK metrics in the same scrape (Core records a completion just after it).
    async def both_completed() -> bool:
        return moved(before, await scrape(base), "temporal_workflow_completed_total") >= 2

    await eventually(both_completed, "Temporal's metrics to count both workflows completed", seconds=10)
    assert total(after, "temporal_activity_execution_latency_seconds_count") > 0
    # Bounded label sets: no ids and no paths with ids anywhere.
    assert not [key for key in after if re.search(r"_[0-9a-f]{16,}", key)]


async def test_an_upstream_error_is_counted_by_cause(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    base = stack.base_url.removesuffix("/v1")
    before = await scrape(base)
    backend.script(model, [Reply(status=503), Reply(text="fine")])
    assert (await sdk.responses.create(model=model, input="hi")).status == "completed"
    after = await scrape(base)
    assert moved(before, after, "durable_responses_inference_errors_total", cause="unavailable", retried="true") == 1


# ---- logs, from a real `dev` as operators run it ----------------------------------------------

SECRET = "zebra-quartz-7781-secret"
"""A distinctive string in everything the client sends: no log line may hold it."""


async def _exercise(dev: DevStack, backend: ScriptedBackend, mcp_server: McpTestServer) -> None:
    client = openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="x", max_retries=0)
    backend.script("m-plain", [Reply(text=f"plain {SECRET}")])
    await client.responses.create(
        model="m-plain", input=f"say {SECRET}", instructions=f"be {SECRET}", metadata={"note": SECRET}
    )
    backend.script("m-retry", [Reply(status=503), Reply(text=f"after a retry {SECRET}")])
    await client.responses.create(model="m-retry", input=f"retry {SECRET}")
    backend.script("m-long", [Reply(text=f"long {SECRET}", delay=6)])  # a workflow task past 5 s
    await client.responses.create(model="m-long", input=f"long {SECRET}")
    backend.script("m-stream", [Reply(text=f"streamed {SECRET}")])
    async for _ in await client.responses.create(model="m-stream", input=f"stream {SECRET}", stream=True):
        pass
    backend.script("m-cancel", [Reply(text="slow " * 100, chunk_delay=0.1)])
    slow = await client.responses.create(model="m-cancel", input=f"cancel {SECRET}", background=True)
    await asyncio.sleep(1)
    await client.responses.cancel(slow.id)
    backend.script("m-tool", [Reply(tool_calls=[("weather", {"city": SECRET})]), Reply(text=f"weather {SECRET}")])
    await client.responses.create(
        model="m-tool",
        input=f"weather {SECRET}",
        tools=[
            {
                "type": "mcp",
                "server_label": "tools",
                "server_url": mcp_server.url,
                "require_approval": "never",
                "headers": {"X-Api-Key": SECRET},
            }
        ],
    )
    async with httpx.AsyncClient(base_url=dev.url, timeout=10) as http:
        assert (
            await http.post("/v1/responses", json={"model": "m", "input": SECRET, "temperature": 9})
        ).status_code == 400
        assert (await http.post("/v1/responses", json={"model": "m", "input": SECRET, SECRET: 1})).status_code == 400
        assert (await http.get(f"/v1/responses/resp_{'0' * 48}")).status_code == 404
    await client.close()


async def test_logs_are_calm_and_hold_no_user_text(tmp_path: Path, backend: ScriptedBackend, mcp_server: McpTestServer):
    # The default workflow task timeout (10 s): a workflow task is heartbeated at 8 s, so a
    # long model call makes one past 5 s, which Core warns of.
    dev = DevStack(
        tmp_path / "dev",
        backend,
        env={"LOG_LEVEL": "INFO", "EGRESS_ALLOWLIST": "127.0.0.1", "WORKFLOW_TASK_TIMEOUT_SECONDS": "10"},
    )
    dev.start()
    try:
        await _exercise(dev, backend, mcp_server)
        await asyncio.sleep(1)
    finally:
        dev.stop()
    log = dev.log.read_text()
    assert SECRET not in log, [line for line in log.splitlines() if SECRET in line]
    assert "Traceback" not in log, log
    lines = log.splitlines()
    access = [line for line in lines if "durable_responses.access" in line]
    assert any(
        "POST /v1/responses 400" in line and "error=invalid_value param=temperature" in line for line in access
    ), access
    assert any("POST /v1/responses 400" in line and "error=unknown_parameter" in line for line in access), access
    assert any("GET /v1/responses/{response_id} 404" in line for line in access), access
    assert any("POST /v1/responses/{response_id}/cancel 200" in line for line in access), access
    calm = [line for line in lines if "temporalio.activity" in line]
    assert any(" INFO " in line and "was cancelled" in line for line in calm), calm
    assert any(" WARNING " in line and "answered 503" in line for line in calm), calm
    assert "TMPRL1104" not in log  # Core's warning of a workflow task past 5 s, with its counters
    assert any(" INFO " in line and "a long model call holds it open" in line for line in lines), lines
    assert "\x1b[" not in log, "terminal colour codes"


async def test_a_wait_for_capacity_is_no_warning_and_no_traceback(tmp_path: Path, backend: ScriptedBackend):
    """A call deferred by its deployment's budget (`rpm`) is how pacing works, not a failure:
    Temporal's activity logger keeps it at DEBUG."""
    models = tmp_path / "models.yaml"
    models.write_text(
        f"model_list:\n  - model_name: '*'\n    litellm_params:\n      model: openai/*\n"
        f"      api_base: {backend.base_url}\n      rpm: 30\n",
        encoding="utf-8",
    )  # a slot every 2 s: of three background calls at once, two wait for theirs
    dev = DevStack(tmp_path / "dev", backend, env={"LOG_LEVEL": "INFO", "MODELS_FILE": str(models)})
    dev.start()
    try:
        client = openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="x", max_retries=0)
        started = asyncio.get_running_loop().time()
        created = await asyncio.gather(
            *(client.responses.create(model="m-capacity", input=f"hi {n}", background=True) for n in range(3))
        )
        ended = [await until_terminal(client, response.id) for response in created]
        waited = asyncio.get_running_loop().time() - started
        await client.close()
    finally:
        dev.stop()
    assert [response.status for response in ended] == ["completed"] * 3
    assert waited >= 3.5, "the budget spaced the three calls 2 s apart"
    log = dev.log.read_text()
    assert "Completing activity as failed" not in log and "Traceback" not in log, log


async def test_json_logs_are_one_object_a_line(tmp_path: Path, backend: ScriptedBackend):
    dev = DevStack(tmp_path / "dev", backend, env={"LOG_FORMAT": "json"}, stderr_apart=True)
    dev.start()
    try:
        client = openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="x", max_retries=0)
        backend.script("m-json", [Reply(text="ok")])
        created = await client.responses.create(model="m-json", input="hi")
        async with httpx.AsyncClient(base_url=dev.url, timeout=10) as http:
            await http.post("/v1/responses", json={"model": "m", "input": "x", "temperature": 9})
            await http.post(f"/v1/responses/{created.id}/cancel")
        await client.close()
    finally:
        dev.stop()
    entries = [json.loads(line) for line in dev.errors.read_text().splitlines()]
    kinds = defaultdict(list)
    for entry in entries:
        assert {"time", "level", "logger", "message"} <= entry.keys(), entry
        kinds[entry["logger"]].append(entry)
    refused = [entry for entry in kinds["durable_responses.access"] if entry["status"] == 400]
    assert refused and refused[0]["route"] == "/v1/responses" and refused[0]["error_code"] == "invalid_value"
    assert refused[0]["param"] == "temperature" and refused[0]["method"] == "POST"
    cancelled = [entry for entry in kinds["durable_responses.access"] if entry["route"].endswith("/cancel")]
    assert cancelled and cancelled[0]["response_id"] == created.id
    assert kinds["store.migrate"] and kinds["worker.roles"], "a start-up line from each part"


# ---- the Temporal UI ----------------------------------------------------------------------------


async def test_temporal_shows_each_response_and_filters_them_by_state(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    """Search attributes say which responses wait for approval (`temporal workflow list
    --query 'ResponseState="awaiting_approval"'`); each workflow has a summary and details."""
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": f"/tmp/{model}"})]), Reply(text="done")])
    tool = {"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "always"}
    waiting = await sdk.responses.create(model=model, input="please delete the file", tools=[tool], background=True)
    request = (await until_awaiting_approval(sdk, waiting.id)).output[-1]

    by_model = f'ResponseModel = "{model}"'
    await eventually(
        lambda: _contains(_listed(stack, f'ResponseState = "awaiting_approval" AND {by_model}'), waiting.id),
        "the waiting response to be listed as awaiting approval",
        seconds=20,
    )
    handle = stack.client.get_workflow_handle(waiting.id)
    description = await handle.describe()
    # No summary unless WORKFLOW_SUMMARY_INPUT is on (the model is ResponseModel); what the
    # response is, its current details say under its state, from the workflow's input.
    assert await description.static_summary() is None and await description.static_details() is None
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert details.startswith("**awaiting approval** of 1 MCP call"), details
    assert "background" in details and "mcp:tools" in details and mcp_server.url not in details
    async with stack.http() as http:
        await http.post(
            f"/v1/responses/{waiting.id}/approvals", json={"approval_request_id": request.id, "approve": True}
        )
    await until_terminal(sdk, waiting.id)
    await eventually(
        lambda: _contains(_listed(stack, f'ResponseState = "completed" AND {by_model}'), waiting.id),
        "the response to be listed as completed",
        seconds=20,
    )
    assert waiting.id not in await _listed(stack, f'ResponseState = "awaiting_approval" AND {by_model}')


async def test_a_response_that_never_waits_leaves_its_end_to_temporals_status(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """A response that goes from its request to its answer writes no search attribute (each
    write is a history event and a visibility write): its workflow's id is its id, its status
    says how it ended. One that ends `incomplete`, which that status cannot tell from
    `completed`, or `failed`, is described by one upsert: its state, its model, the response
    it follows."""
    backend.script(model, [Reply(text="all of it"), Reply(text="cut", finish_reason="length")])
    backend.script(f"{model}-fail", [Reply(status=400, error_message="no such thing")])
    plain = await sdk.responses.create(model=model, input="hi")
    cut = await sdk.responses.create(model=model, input="hi", previous_response_id=plain.id)
    failed = await sdk.responses.create(model=f"{model}-fail", input="hi")
    assert (plain.status, cut.status, failed.status) == ("completed", "incomplete", "failed")
    for response in (plain, cut, failed):  # a response is answered before its workflow closes
        with contextlib.suppress(WorkflowFailureError):
            await stack.client.get_workflow_handle(response.id).result()
    plain_run = await stack.client.get_workflow_handle(plain.id).describe()
    assert plain_run.status == WorkflowExecutionStatus.COMPLETED
    ours = (RESPONSE_STATE, RESPONSE_MODEL, PREVIOUS_RESPONSE_ID)
    assert [plain_run.typed_search_attributes.get(key) for key in ours] == [None, None, None]
    upserts = [
        event
        async for event in stack.client.get_workflow_handle(plain.id).fetch_history_events()
        if event.event_type == EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES
    ]
    assert upserts == []
    cut_run = await stack.client.get_workflow_handle(cut.id).describe()
    assert cut_run.typed_search_attributes.get(RESPONSE_STATE) == "incomplete"
    assert cut_run.typed_search_attributes.get(RESPONSE_MODEL) == model
    assert cut_run.typed_search_attributes.get(PREVIOUS_RESPONSE_ID) == plain.id
    failed_run = await stack.client.get_workflow_handle(failed.id).describe()
    assert failed_run.status == WorkflowExecutionStatus.FAILED
    assert failed_run.typed_search_attributes.get(RESPONSE_STATE) == "failed"
    assert failed_run.typed_search_attributes.get(RESPONSE_MODEL) == f"{model}-fail"

    # docs/operating.md's queries
    await eventually(
        lambda: _contains(_listed(stack, 'ExecutionStatus = "Completed" AND ResponseState IS NULL'), plain.id),
        "the plain response to be listed as completed, with no state",
        seconds=20,
    )
    by_model = f'ResponseModel = "{model}"'
    await eventually(
        lambda: _contains(_listed(stack, f'ResponseState = "incomplete" AND {by_model}'), cut.id),
        "the cut response to be listed as incomplete",
        seconds=20,
    )
    assert plain.id not in await _listed(stack, f'ResponseState = "incomplete" AND {by_model}')
    await eventually(
        lambda: _contains(_listed(stack, f'PreviousResponseId = "{plain.id}"'), cut.id),
        "the cut response to be listed as the plain one's follower",
        seconds=20,
    )


async def test_each_upstream_attempt_is_shown_in_temporal(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """Each failed model call is its own marker in history, with its error, and while the
    workflow waits to try again its current details say which attempt failed and why."""
    backend.script(
        model,
        [
            Reply(status=503, error_message="overloaded-one"),
            Reply(status=503, error_message="overloaded-two", headers={"retry-after": "3"}),
            Reply(text="fine"),
        ],
    )
    response = await sdk.responses.create(model=model, input="hi", background=True)
    handle = stack.client.get_workflow_handle(response.id)

    async def shown() -> str:
        return (await handle.query("__temporal_workflow_metadata")).current_details

    await eventually(lambda: _holds(shown(), "overloaded-two"), "the second failure in the current details")
    details = await shown()
    assert "upstream attempt 2 of 3 failed" in details and "503" in details and "next attempt in 3 s" in details
    assert (await until_terminal(sdk, response.id)).status == "completed"
    assert "completed" in await shown()
    markers = [
        event.marker_recorded_event_attributes
        for event in (await handle.fetch_history()).events
        if event.event_type == EventType.EVENT_TYPE_MARKER_RECORDED
        and event.marker_recorded_event_attributes.marker_name == "core_local_activity"
    ]
    # Failure messages are encrypted in history (they can quote user content); the data
    # converter, with the key, reads them as the UI does through the codec endpoint.
    assert {marker.failure.message for marker in markers if marker.HasField("failure")} == {"Encoded failure"}
    failures = [
        str(await stack.client.data_converter.decode_failure(marker.failure))
        for marker in markers
        if marker.HasField("failure")
    ]
    assert len([f for f in failures if "overloaded" in f]) == 2, failures
    assert "overloaded-one" in failures[0] and "overloaded-two" in failures[1]
    timers = [
        event
        for event in (await handle.fetch_history()).events
        if event.event_type == EventType.EVENT_TYPE_TIMER_STARTED
    ]
    assert len(timers) == 2


async def _holds(found, wanted: str) -> bool:  # noqa: ANN001
    return wanted in await found


async def _listed(stack: Stack, query: str) -> list[str]:
    """The ids of the workflows Temporal's visibility lists for `query`."""
    return [execution.id async for execution in stack.client.list_workflows(query)]


async def _contains(found, wanted: str) -> bool:  # noqa: ANN001
    return wanted in await found
