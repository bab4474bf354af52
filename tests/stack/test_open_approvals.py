"""Approval requests that ended responses leave open (`store/approvals.py`): the approvals
list shows them (`decision_applies: on_follow_up`), a decision made on one through the approvals
route is kept, and the client's next request that continues the response applies it, once:
an approval runs the call, a denial tells the model why. A client answering the request itself
is told it was decided; a follow-up that leaves an undecided request closes it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import openai
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.approvals import answer, gated
from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack


async def _ended_with_a_request(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer, path: str, *replies: Reply
) -> tuple[str, str]:
    """A non-background response that ends asking to delete `path`: (response id, request id)."""
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": path})]), *replies])
    ended = await sdk.responses.create(model=model, input=f"please delete {path}", tools=gated(mcp_server))
    assert ended.status == "completed" and ended.output[-1].type == "mcp_approval_request"
    return ended.id, ended.output[-1].id


async def _pending(stack: Stack) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    after = None
    async with stack.http() as http:
        while True:
            page = await http.get("/v1/approvals", params={"status": "pending"} | ({"after": after} if after else {}))
            assert page.status_code == 200, page.text
            body = page.json()
            found.update({entry["id"]: entry for entry in body["data"]})
            if not body["has_more"]:
                return found
            after = body["last_id"]


async def _decide(stack: Stack, response_id: str, body: dict[str, Any]) -> Any:
    async with stack.http() as http:
        return await http.post(f"/v1/responses/{response_id}/approvals", json=body)


async def test_an_approval_kept_for_the_follow_up_runs_the_call_once(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    path = f"/tmp/{model}-kept"
    response_id, request_id = await _ended_with_a_request(
        sdk, backend, model, mcp_server, path, Reply(text="deleted it"), Reply(text="nothing to do")
    )
    listed = (await _pending(stack))[request_id]
    assert listed["decision_applies"] == "on_follow_up" and listed["response_status"] == "completed"
    assert listed["response_id"] == response_id and listed["name"] == "delete_file"
    assert listed["last_user_message"] == f"please delete {path}"

    decided = await _decide(stack, response_id, {"approval_request_id": request_id, "approve": True})
    assert decided.status_code == 200 and decided.json()["status"] == "completed", decided.text
    assert request_id not in await _pending(stack)
    again = await _decide(stack, response_id, {"approval_request_id": request_id, "approve": False})
    assert again.status_code == 400 and again.json()["error"]["param"] == "approval_request_id"
    assert mcp_server.calls_of("delete_file").count({"path": path}) == 0  # nothing runs until the client goes on

    follow_up = await sdk.responses.create(
        model=model, previous_response_id=response_id, tools=gated(mcp_server), input="go on"
    )
    call = follow_up.output[0]
    assert call.type == "mcp_call" and call.approval_request_id == request_id and call.output == f"deleted {path}"
    assert follow_up.output_text == "deleted it"
    assert mcp_server.calls_of("delete_file").count({"path": path}) == 1

    # Another branch from the same response does not run the call again.
    branch = await sdk.responses.create(
        model=model, previous_response_id=response_id, tools=gated(mcp_server), input="go on"
    )
    assert not any(item.type == "mcp_call" for item in branch.output) and branch.output_text == "nothing to do"
    assert mcp_server.calls_of("delete_file").count({"path": path}) == 1


async def test_a_denial_kept_for_the_follow_up_tells_the_model_why(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    path = f"/tmp/{model}-denied"
    response_id, request_id = await _ended_with_a_request(
        sdk, backend, model, mcp_server, path, Reply(text="I left it")
    )
    decided = await _decide(
        stack, response_id, {"approval_request_id": request_id, "approve": False, "reason": "it is the only copy"}
    )
    assert decided.status_code == 200, decided.text
    follow_up = await sdk.responses.create(
        model=model, previous_response_id=response_id, tools=gated(mcp_server), input="well?"
    )
    assert [item.type for item in follow_up.output] == ["message"] and follow_up.output_text == "I left it"
    assert "it is the only copy" in json.dumps(backend.requests(model)[-1]["messages"])
    assert {"path": path} not in mcp_server.calls_of("delete_file")


async def test_a_client_answering_a_request_decided_in_the_inbox_is_told_so(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    path = f"/tmp/{model}-both"
    response_id, request_id = await _ended_with_a_request(sdk, backend, model, mcp_server, path, Reply(text="deleted"))
    assert (await _decide(stack, response_id, {"approval_request_id": request_id, "approve": True})).status_code == 200
    async with stack.http() as http:
        refused = await http.post(
            "/v1/responses",
            json={
                "model": model,
                "previous_response_id": response_id,
                "tools": gated(mcp_server),
                "input": [answer(request_id, False)],
            },
        )
        without_tools = await http.post(
            "/v1/responses", json={"model": model, "previous_response_id": response_id, "input": "go on"}
        )
    assert refused.status_code == 400 and "approvals inbox" in refused.json()["error"]["message"]
    assert refused.json()["error"]["param"] == "approval_request_id"
    # An approved call needs its MCP tool (and credentials) sent again; the decision waits for it.
    assert without_tools.status_code == 400 and without_tools.json()["error"]["param"] == "tools"
    follow_up = await sdk.responses.create(
        model=model, previous_response_id=response_id, tools=gated(mcp_server), input="go on"
    )
    assert follow_up.output[0].type == "mcp_call" and follow_up.output_text == "deleted"


async def test_a_follow_up_that_leaves_an_undecided_request_closes_it(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    path = f"/tmp/{model}-left"
    response_id, request_id = await _ended_with_a_request(
        sdk, backend, model, mcp_server, path, Reply(text="never mind then")
    )
    assert request_id in await _pending(stack)
    moved_on = await sdk.responses.create(
        model=model, previous_response_id=response_id, tools=gated(mcp_server), input="forget it"
    )
    assert moved_on.output_text == "never mind then"
    assert request_id not in await _pending(stack)
    late = await _decide(stack, response_id, {"approval_request_id": request_id, "approve": True})
    assert late.status_code == 409 and "waits for no approval" in late.json()["error"]["message"]

    # Removing the follow-up opens the request again, as removing an answer makes it answerable.
    await sdk.responses.delete(moved_on.id)
    assert (await _pending(stack))[request_id]["decision_applies"] == "on_follow_up"


_SHARED: dict[int, tuple[str, str]] = {}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    approval_request_id=st.one_of(st.text(max_size=90), st.just("mcpr_0"), st.from_regex(r"mcpr_[0-9a-f]{32}")),
    approve=st.booleans(),
    reason=st.one_of(st.none(), st.text(max_size=50)),
)
async def test_a_decision_on_an_ended_response_is_kept_only_for_its_open_request(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    mcp_server: McpTestServer,
    approval_request_id: str,
    approve: bool,
    reason: str | None,
):
    if id(stack) not in _SHARED:
        _SHARED[id(stack)] = await _ended_with_a_request(
            sdk, backend, "open-approvals-property", mcp_server, "/tmp/property"
        )
    response_id, request_id = _SHARED[id(stack)]
    body = {"approval_request_id": approval_request_id, "approve": approve} | ({"reason": reason} if reason else {})
    decided = await _decide(stack, response_id, body)
    assert decided.status_code in (400, 409), decided.text
    assert decided.json()["error"]["param"] in ("approval_request_id", "reason")
    assert request_id in await _pending(stack)  # still open and undecided


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reason=st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=60))
async def test_any_reason_is_kept_for_the_follow_up_or_refused_naming_it(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, reason: str
):
    model = f"open-approvals-reasons-{uuid.uuid4().hex[:8]}"
    response_id, request_id = await _ended_with_a_request(
        sdk, backend, model, mcp_server, "/tmp/reasons", Reply(text="left it")
    )
    decided = await _decide(stack, response_id, {"approval_request_id": request_id, "approve": False, "reason": reason})
    if decided.status_code == 400:  # text this server refuses everywhere (a NUL): refused, nothing kept
        assert decided.json()["error"]["param"] == "reason", decided.text
        assert request_id in await _pending(stack)
        return
    assert decided.status_code == 200, decided.text
    follow_up = await sdk.responses.create(
        model=model, previous_response_id=response_id, tools=gated(mcp_server), input="and?"
    )
    assert follow_up.output_text == "left it"
    told = backend.requests(model)[-1]["messages"]
    assert any(reason in (message.get("content") or "") for message in told if message["role"] == "tool")
