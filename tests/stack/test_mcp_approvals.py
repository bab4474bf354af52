"""Approvals of MCP calls: OpenAI's way for ordinary responses (a follow-up response answers
the request), and a durable wait inside background responses (answered by
`POST /v1/responses/{id}/approvals` or `durable-responses approve`)."""

from __future__ import annotations

import asyncio
import json
import subprocess

import openai
import pytest

from tests.support.approvals import answer, gated
from tests.support.mcp_servers import McpTestServer
from tests.support.processes import CLI
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack
from tests.support.waiting import until_awaiting_approval, until_terminal


async def test_approved_in_a_follow_up_the_call_runs_without_asking_the_model_again(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    path = f"/tmp/{model}-approved"
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": path})]), Reply(text="deleted it")])
    first = await sdk.responses.create(model=model, input="delete it", tools=gated(mcp_server))
    request = first.output[-1]
    assert first.status == "completed" and request.type == "mcp_approval_request" and request.name == "delete_file"
    assert mcp_server.calls_of("delete_file").count({"path": path}) == 0

    second = await sdk.responses.create(
        model=model, previous_response_id=first.id, tools=gated(mcp_server), input=[answer(request.id, True)]
    )
    call, message = second.output
    assert call.type == "mcp_call" and call.approval_request_id == request.id and call.output == f"deleted {path}"
    assert json.loads(call.arguments) == {"path": path} and message.content[0].text == "deleted it"
    assert mcp_server.calls_of("delete_file").count({"path": path}) == 1
    requests = backend.requests(model)
    assert len(requests) == 2  # the model was not asked again for the approved call
    assert requests[1]["messages"][-2]["tool_calls"][0]["id"] == request.id
    assert requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": request.id, "content": f"deleted {path}"}


async def test_denied_in_a_follow_up_the_model_is_told_and_answers(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    path = f"/tmp/{model}-denied"
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": path})]), Reply(text="ok, I left it")])
    first = await sdk.responses.create(model=model, input="delete it", tools=gated(mcp_server))
    second = await sdk.responses.create(
        model=model,
        previous_response_id=first.id,
        tools=gated(mcp_server),
        input=[answer(first.output[-1].id, False, "it is my thesis")],
    )
    assert [item.type for item in second.output] == ["message"] and second.output_text == "ok, I left it"
    assert {"path": path} not in mcp_server.calls_of("delete_file")
    told = backend.requests(model)[1]["messages"][-1]
    assert told["role"] == "tool" and "denied" in told["content"] and "it is my thesis" in told["content"]


async def test_unknown_or_already_used_approval_ids_are_refused(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]), Reply(text="done")])
    first = await sdk.responses.create(model=model, input="delete", tools=gated(mcp_server))
    with pytest.raises(openai.BadRequestError) as unknown:
        await sdk.responses.create(
            model=model,
            previous_response_id=first.id,
            tools=gated(mcp_server),
            input=[answer("mcpr_nonexistent", True)],
        )
    assert "mcpr_nonexistent" in unknown.value.message and unknown.value.body["param"].endswith("approval_request_id")
    await sdk.responses.create(
        model=model, previous_response_id=first.id, tools=gated(mcp_server), input=[answer(first.output[-1].id, True)]
    )
    with pytest.raises(openai.BadRequestError) as used:
        await sdk.responses.create(
            model=model,
            previous_response_id=first.id,
            tools=gated(mcp_server),
            input=[answer(first.output[-1].id, True)],
        )
    assert "already been answered" in used.value.message
    assert len(backend.requests(model)) == 2  # neither refused request started a response


async def test_a_follow_up_that_ignores_a_request_tells_the_model_it_was_not_run(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/y"})]), Reply(text="fine")])
    first = await sdk.responses.create(model=model, input="delete", tools=gated(mcp_server))
    await sdk.responses.create(model=model, previous_response_id=first.id, input="never mind", tools=gated(mcp_server))
    messages = backend.requests(model)[1]["messages"]
    assert messages[-2]["role"] == "tool" and "not run" in messages[-2]["content"]
    assert messages[-1] == {"role": "user", "content": "never mind"}


async def test_background_waits_for_approval_then_continues_in_place(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    path = f"/tmp/{model}-bg"
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": path})]), Reply(text="deleted in place")])
    created = await sdk.responses.create(model=model, input="delete", tools=gated(mcp_server), background=True)
    waiting = await until_awaiting_approval(sdk, created.id)
    request = waiting.output[-1]
    assert waiting.status == "in_progress" and request.name == "delete_file"
    async with stack.http() as http:
        refused = await http.post(
            f"/v1/responses/{created.id}/approvals", json={"approval_request_id": "mcpr_unknown", "approve": True}
        )
        assert refused.status_code == 400 and "mcpr_unknown" in refused.json()["error"]["message"]
        decided = await http.post(
            f"/v1/responses/{created.id}/approvals", json={"approval_request_id": request.id, "approve": True}
        )
        assert decided.status_code == 200, decided.text
        assert decided.json()["id"] == created.id
        again = await http.post(
            f"/v1/responses/{created.id}/approvals", json={"approval_request_id": request.id, "approve": False}
        )
        assert again.status_code == 400 and "already been answered" in again.json()["error"]["message"]
    final = await until_terminal(sdk, created.id)
    assert final.status == "completed" and final.output_text == "deleted in place"
    types = [item.type for item in final.output]
    assert types == ["mcp_list_tools", "mcp_approval_request", "mcp_call", "message"]
    assert final.output[2].approval_request_id == request.id and final.output[2].output == f"deleted {path}"
    # The stream shows the request, the call and the rest, from the first event.
    events = [event async for event in await sdk.responses.retrieve(created.id, stream=True)]
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    for expected in (
        "response.mcp_list_tools.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call_arguments.done",
    ):
        assert expected in kinds
    added = [event.item.type for event in events if event.type == "response.output_item.added"]
    assert added == types
    assert [event.sequence_number for event in events] == list(range(len(events)))


async def test_background_denied_with_the_cli(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/z"})]), Reply(text="kept it")])
    created = await sdk.responses.create(model=model, input="delete", tools=gated(mcp_server), background=True)
    request = (await until_awaiting_approval(sdk, created.id)).output[-1]
    api_url = stack.base_url.removesuffix("/v1")
    denied = await asyncio.to_thread(
        subprocess.run,
        [
            CLI,
            "approve",
            created.id,
            request.id,
            "--deny",
            "--reason",
            "not today",
            "--api-url",
            api_url,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert denied.returncode == 0, denied.stderr
    assert f"denied {request.id}" in denied.stdout
    final = await until_terminal(sdk, created.id)
    assert final.output_text == "kept it" and not any(item.type == "mcp_call" for item in final.output)
    assert "not today" in backend.requests(model)[1]["messages"][-1]["content"]
    again = await asyncio.to_thread(
        subprocess.run,
        [CLI, "approve", created.id, request.id, "--api-url", api_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Answered again once the response has ended: the same answer as while it waited.
    assert again.returncode == 1 and "already been answered" in again.stderr, again.stderr


async def test_approvals_endpoint_refuses_what_is_not_waiting(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/w"})])])
    ordinary = await sdk.responses.create(model=model, input="delete", tools=gated(mcp_server))
    async with stack.http() as http:
        # Its own request is open for its follow-up (`tests/stack/test_open_approvals.py`); no other is.
        body = {"approval_request_id": "mcpr_never_asked", "approve": True}
        finished = await http.post(f"/v1/responses/{ordinary.id}/approvals", json=body)
        missing = await http.post("/v1/responses/resp_missing/approvals", json=body)
        malformed = await http.post(f"/v1/responses/{ordinary.id}/approvals", json={"approve": "yes"})
    assert finished.status_code == 409 and "waits for no approval" in finished.json()["error"]["message"]
    assert missing.status_code == 404
    assert malformed.status_code == 400


async def test_an_approval_wait_times_out_into_an_open_request(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str, mcp_server: McpTestServer
):
    from tests.support.stack import TEST_EXECUTION, running_stack

    execution = TEST_EXECUTION.model_copy(update={"approval_timeout_seconds": 1})
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/t"})]), Reply(text="deleted later")])
    async with running_stack(temporal_address, backend, store, execution=execution) as stack:
        async with stack.sdk(timeout=30) as client:
            created = await client.responses.create(
                model=model, input="delete", tools=gated(mcp_server), background=True
            )
            timed_out = await until_terminal(client, created.id)
            assert timed_out.status == "completed" and timed_out.output[-1].type == "mcp_approval_request"
            # The inbox lists it among requests of ended responses, asked when the wait began: at
            # least the wait's second before the response ended (both are whole seconds, rounded down).
            async with stack.http() as http:
                listed = (await http.get("/v1/approvals")).json()["data"]
            (entry,) = [entry for entry in listed if entry["id"] == timed_out.output[-1].id]
            assert entry["decision_applies"] == "on_follow_up"
            assert timed_out.created_at <= entry["created_at"] <= timed_out.completed_at - 1
            # The request stays open: a follow-up response can still answer it.
            later = await client.responses.create(
                model=model,
                previous_response_id=created.id,
                tools=gated(mcp_server),
                input=[answer(timed_out.output[-1].id, True)],
            )
    assert later.output[0].type == "mcp_call" and later.output_text == "deleted later"
