"""Every case of issue 12 that broke a response or the server, each a test: a hostile or
unlucky request is refused at the door leaving nothing behind, or, once accepted, ends in
bounded time without anything whole passing through Temporal that could outgrow it."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import openai
import pytest

from activities.handover import Outcomes
from models.history_budget import PARK_ITEM_BYTES
from store.schema import metadata
from tests.support import store_probe
from tests.support.histories import keep_recording
from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, has_workflow, running_stack
from tests.support.waiting import eventually, until_awaiting_approval, until_terminal

FIVE_MB = 5 * 1024 * 1024


# ---- what a response leaves behind ---------------------------------------------------------


async def rows_left(stack: Stack, response_id: str) -> dict[str, int]:
    """Rows that name the response, table by table (only the tables that have any)."""
    found = {}
    for table in metadata.sorted_tables:
        columns = {column.name for column in table.columns}
        for column in ("response_id", "id", "active_response_id"):
            if column in columns and (table.name == "responses" or column != "id"):
                count = await store_probe.value(
                    stack.settings.database_url,
                    f"SELECT COUNT(*) FROM {table.name} WHERE {column} = :id",
                    id=response_id,
                )
                if count:
                    found[f"{table.name}.{column}"] = count
    return found


async def response_rows(stack: Stack) -> int:
    return await store_probe.value(stack.settings.database_url, "SELECT COUNT(*) FROM responses")


async def largest_history_event(stack: Stack, response_id: str) -> tuple[int, int]:
    """The largest event of the response's workflow history, and the whole history, in bytes."""
    history = await stack.client.get_workflow_handle(response_id).fetch_history()
    sizes = [event.ByteSize() for event in history.events]
    return max(sizes), sum(sizes)


async def post_raw(stack: Stack, body: bytes, path: str = "/v1/responses", **headers: str) -> httpx.Response:
    async with stack.http() as http:
        return await http.post(path, content=body, headers={"content-type": "application/json", **headers})


def refused(answer: httpx.Response, status: int, param: str | None) -> dict[str, Any]:
    assert answer.status_code == status, answer.text[:500]
    error = answer.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["param"] == param, error
    return error


# ---- 1. lone surrogates -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b'{"model": "m", "input": "hi", "metadata": {"k": "\\udfff"}}', "metadata.k"),
        (b'{"model": "m", "input": "hi", "instructions": "a\\udfffb"}', "instructions"),
        (b'{"model": "m", "input": "hi", "user": "\\ud800"}', "user"),
        (b'{"model": "m", "input": "\\udfff"}', "input"),
        (
            b'{"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "\\udc00"}]}]}',
            "input[0].content[0].text",
        ),
    ],
)
async def test_a_lone_surrogate_is_refused_naming_where_and_leaves_nothing(stack: Stack, body: bytes, param: str):
    before = await response_rows(stack)
    error = refused(await post_raw(stack, body), 400, param)
    assert "surrogate" in error["message"]
    assert await response_rows(stack) == before
    async with stack.http() as http:  # the listing still works: no unreadable row was left
        assert (await http.get("/v1/responses")).status_code == 200


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (b'{"model": "m", "input": "hi", "temperature": NaN}', "temperature"),
        (
            b'{"model": "m", "input": "hi", "tools": [{"type": "shell", "environment": Infinity}]}',
            "tools[0].environment",
        ),
    ],
)
async def test_nan_or_infinity_is_refused_naming_where_not_called_a_surrogate(stack: Stack, body: bytes, param: str):
    """Python's parser takes NaN and Infinity, JSON (and orjson) does not: the refusal names the
    value and where it is (it once said "a lone surrogate" with no parameter)."""
    error = refused(await post_raw(stack, body), 400, param)
    assert "NaN and Infinity" in error["message"] and "surrogate" not in error["message"]


async def test_a_surrogate_in_an_approval_reason_is_refused(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    response = await sdk.responses.create(model=model, input="hi")
    answer = await post_raw(
        stack,
        b'{"approval_request_id": "mcpr_1", "approve": false, "reason": "\\udfff"}',
        f"/v1/responses/{response.id}/approvals",
    )
    assert "surrogate" in refused(answer, 400, "reason")["message"]


# ---- 2. nesting depth ---------------------------------------------------------------------


@pytest.mark.parametrize("depth", [70, 220, 260, 100_000])
async def test_deep_nesting_is_refused_at_the_door(stack: Stack, depth: int):
    deep = '{"a":' * depth + "1" + "}" * depth
    body = (
        '{"model": "m", "input": "hi", "tools": [{"type": "function", "name": "f", "parameters": ' + deep + "}]}"
    ).encode()
    before = await response_rows(stack)
    answer = await post_raw(stack, body)
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    if depth < 1000:  # past the parser's own limit, where the body is refused as a whole
        assert error["param"].startswith("tools[0].parameters.a.a") and len(error["param"]) < 300, error
    assert "nested" in error["message"] and "64" in error["message"], error
    assert await response_rows(stack) == before


# ---- 3. sizes: replies, tool results and arguments past Temporal's payload limit ------------


@pytest.mark.parametrize("mode", ["plain", "stream", "background"])
async def test_a_5_mb_reply_completes_with_one_upstream_call(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mode: str
):
    text = "word " * (FIVE_MB // 5)
    backend.script(model, [Reply(text=text)])
    if mode == "stream":
        async with await sdk.responses.create(model=model, input="write a lot", stream=True) as events:
            seen = [event async for event in events]
        assert seen[-1].type == "response.completed" and seen[-1].response.output_text == text
        response_id = seen[0].response.id
    elif mode == "background":
        started = await sdk.responses.create(model=model, input="write a lot", background=True)
        response_id = started.id
        await until_terminal(sdk, response_id)
    else:
        created = await sdk.responses.create(model=model, input="write a lot")
        assert created.output_text == text
        response_id = created.id
    stored = await sdk.responses.retrieve(response_id)
    assert stored.status == "completed" and stored.output_text == text
    assert len(backend.requests(model)) == 1, "the model was asked again"
    largest, total = await largest_history_event(stack, response_id)
    assert largest < 64 * 1024 and total < 512 * 1024, (largest, total)


async def test_a_follow_up_of_a_5_mb_reply_sends_it_back_whole(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    text = "x" * FIVE_MB
    backend.script(model, [Reply(text=text), Reply(text="short")])
    first = await sdk.responses.create(model=model, input="write a lot")
    second = await sdk.responses.create(model=model, input="and?", previous_response_id=first.id)
    assert second.output_text == "short"
    assert backend.requests(model)[1]["messages"][1] == {"role": "assistant", "content": text}


def _mcp(server: McpTestServer, approval: str = "never") -> dict[str, Any]:
    return {"type": "mcp", "server_label": "tools", "server_url": server.url, "require_approval": approval}


async def test_a_5_mb_tool_result_completes_with_one_tool_call(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    calls_before = len(mcp_server.calls_of("big"))
    backend.script(model, [Reply(tool_calls=[("big", {"size": FIVE_MB})]), Reply(text="that was long")])
    response = await sdk.responses.create(model=model, input="big", tools=[_mcp(mcp_server)])
    assert response.status == "completed" and response.output_text == "that was long"
    call = next(item for item in response.output if item.type == "mcp_call")
    assert call.output == "x" * FIVE_MB and call.arguments == json.dumps({"size": FIVE_MB})
    assert len(mcp_server.calls_of("big")) == calls_before + 1
    told = backend.requests(model)[1]["messages"][-1]
    assert told["role"] == "tool" and told["content"] == "x" * FIVE_MB
    assert len(backend.requests(model)) == 2
    largest, total = await largest_history_event(stack, response.id)
    assert largest < 64 * 1024 and total < 512 * 1024, (largest, total)


async def test_5_mb_tool_arguments_reach_the_tool_whole(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    text = "y" * FIVE_MB
    backend.script(model, [Reply(tool_calls=[("measure", {"text": text})]), Reply(text="measured")])
    response = await sdk.responses.create(model=model, input="measure", tools=[_mcp(mcp_server)], stream=False)
    call = next(item for item in response.output if item.type == "mcp_call")
    assert call.output == f"{FIVE_MB} characters" and json.loads(call.arguments) == {"text": text}
    assert mcp_server.calls_of("measure")[-1] == {"length": FIVE_MB}
    largest, _ = await largest_history_event(stack, response.id)
    assert largest < 64 * 1024


async def test_an_approved_call_with_large_arguments_runs_whole_in_a_follow_up(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    """The request's arguments travel as a stub in the follow-up's workflow input too."""
    text = "z" * (PARK_ITEM_BYTES * 40)
    backend.script(model, [Reply(tool_calls=[("measure", {"text": text})]), Reply(text="done")])
    asked = await sdk.responses.create(model=model, input="measure", tools=[_mcp(mcp_server, "always")])
    request = next(item for item in asked.output if item.type == "mcp_approval_request")
    assert json.loads(request.arguments) == {"text": text}
    follow_up = await sdk.responses.create(
        model=model,
        previous_response_id=asked.id,
        tools=[_mcp(mcp_server, "always")],
        input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
    )
    call = next(item for item in follow_up.output if item.type == "mcp_call")
    assert call.status == "completed" and json.loads(call.arguments) == {"text": text}
    assert mcp_server.calls_of("measure")[-1] == {"length": len(text)}
    start = await stack.client.get_workflow_handle(follow_up.id).fetch_history()
    assert start.events[0].ByteSize() < 64 * 1024


async def test_an_approved_large_call_runs_whole_in_a_background_response(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    text = "w" * FIVE_MB
    backend.script(model, [Reply(tool_calls=[("measure", {"text": text})]), Reply(text="done")])
    started = await sdk.responses.create(
        model=model, input="measure", tools=[_mcp(mcp_server, "always")], background=True
    )
    waiting = await until_awaiting_approval(sdk, started.id)
    request = next(item for item in waiting.output if item.type == "mcp_approval_request")
    async with httpx.AsyncClient(base_url=str(sdk.base_url), timeout=60) as http:
        answer = await http.post(
            f"/responses/{started.id}/approvals", json={"approval_request_id": request.id, "approve": True}
        )
        assert answer.status_code == 200, answer.text
    ended = await until_terminal(sdk, started.id)
    assert ended.status == "completed"
    call = next(item for item in ended.output if item.type == "mcp_call")
    assert json.loads(call.arguments) == {"text": text} and call.output == f"{FIVE_MB} characters"


async def test_a_huge_tool_listing_fails_the_listing_clearly(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    server = McpTestServer("streamable", tool_count=2000, description_size=300).start()
    try:
        response = await sdk.responses.create(model=model, input="hi", tools=[_mcp(server)])
    finally:
        server.stop()
    assert response.status == "failed"
    listing = response.output[0]
    assert listing.type == "mcp_list_tools" and "allowed_tools" in listing.error
    assert backend.requests(model) == []


async def test_a_large_tool_listing_travels_as_a_stub_and_the_model_still_sees_it_whole(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    server = McpTestServer("streamable", tool_count=150, description_size=600).start()  # ~100 KiB listed
    backend.script(
        model,
        [
            Reply(tool_calls=[("add", {"a": 1, "b": 2})]),
            Reply(text="3"),
            Reply(tool_calls=[("add", {"a": 2, "b": 2})]),
            Reply(text="4"),
        ],
    )
    try:
        first = await sdk.responses.create(model=model, input="add", tools=[_mcp(server)])
        second = await sdk.responses.create(
            model=model, input="again", tools=[_mcp(server)], previous_response_id=first.id
        )
    finally:
        server.stop()
    assert first.status == second.status == "completed", (first.error, second.error)
    listing = first.output[0]
    assert listing.type == "mcp_list_tools" and len(listing.tools) == 150 + 11
    assert {tool.description for tool in listing.tools if tool.name.startswith("tool_")} == {"d" * 600}
    assert [item.type for item in second.output] == ["mcp_call", "message"], "the chain's listing was not reused"
    for request in backend.requests(model):
        offered = {tool["function"]["name"]: tool["function"] for tool in request["tools"]}
        assert offered["tool_7"]["description"] == "d" * 600 and offered["add"]["parameters"]["properties"]
    for response in (first, second):
        largest, _ = await largest_history_event(stack, response.id)
        assert largest < 48 * 1024, f"a {largest // 1024} KiB event: the listing travelled whole"
    if stack.store.kind == "sqlite":
        await keep_recording("mcp_listing_parked", stack.client, first.id)
        await keep_recording("mcp_listing_parked_reused", stack.client, second.id)


async def test_3_mb_instructions_are_refused_naming_them(stack: Stack):
    body = json.dumps({"model": "m", "input": "hi", "instructions": "x" * 3_000_000}).encode()
    before = await response_rows(stack)
    refused(await post_raw(stack, body), 400, "instructions")
    assert await response_rows(stack) == before


async def test_a_huge_tool_description_is_refused_naming_tools(stack: Stack):
    tools = [{"type": "function", "name": "f", "description": "d" * 1_500_000, "parameters": {"type": "object"}}]
    refused(await post_raw(stack, json.dumps({"model": "m", "input": "hi", "tools": tools}).encode()), 400, "tools")


async def test_a_50_mb_body_is_refused_before_it_is_read(stack: Stack):
    body = b'{"model": "m", "input": "' + b"x" * (50 * 1024 * 1024) + b'"}'
    started = time.monotonic()
    error = refused(await post_raw(stack, body), 413, None)
    assert "MAX_REQUEST_BYTES" in error["message"] or "16 MiB" in error["message"]
    assert time.monotonic() - started < 10


async def test_a_large_input_is_kept_in_the_store_not_in_history(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    text = "i" * (10 * 1024 * 1024)
    backend.script(model, [Reply(text="read it")])
    response = await sdk.responses.create(model=model, input=text)
    assert response.status == "completed"
    assert backend.requests(model)[0]["messages"][-1]["content"] == text
    largest, _ = await largest_history_event(stack, response.id)
    assert largest < 64 * 1024


# ---- 4. secrets ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "param", "secret"),
    [
        ({"headers": {"X-Key": "sk-secret-value\r\nevil: 1"}}, "tools[0].headers", "sk-secret-value"),
        ({"headers": {"X-Key": "sk-secret-value\n"}}, "tools[0].headers", "sk-secret-value"),
        ({"authorization": "Bearer sk-secret-value\u0000"}, "tools[0].authorization", "sk-secret-value"),
        ({"server_url": "http://user:sk-secret-value@127.0.0.1:1/mcp"}, "tools[0].server_url", "sk-secret-value"),
    ],
)
async def test_a_bad_secret_is_refused_without_quoting_it(stack: Stack, tool: dict, param: str, secret: str):
    mcp = {"type": "mcp", "server_label": "s", "server_url": "http://127.0.0.1:1/mcp", "require_approval": "never"}
    before = await response_rows(stack)
    answer = await post_raw(stack, json.dumps({"model": "m", "input": "hi", "tools": [mcp | tool]}).encode())
    error = refused(answer, 400, param)
    assert secret not in answer.text and "user:" not in error["message"]
    assert await response_rows(stack) == before


async def test_deleted_secrets_leave_the_sqlite_files(
    temporal_address: str, sqlite_store: EmptyStore, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    """SQLite's own: `secure_delete` and a WAL truncation. (On PostgreSQL a deleted row waits
    for VACUUM; what it held is sealed with SECRETS_KEY, which the database never sees.)"""
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]), Reply(text="ok")])
    tool = _mcp(mcp_server, "always") | {"headers": {"X-Api-Key": "sk-" + "s" * 40}}
    async with running_stack(temporal_address, backend, sqlite_store) as stack, stack.sdk() as sdk:
        started = await sdk.responses.create(model=model, input="go", tools=[tool], background=True)
        await until_awaiting_approval(sdk, started.id)
        sealed = await store_probe.value(
            sqlite_store.url, "SELECT sealed FROM mcp_secrets WHERE response_id = :id", id=started.id
        )
        await sdk.responses.cancel(started.id)

        def on_disk() -> bool:
            files = [path for path in sqlite_store.data_dir.glob("responses.db*") if path.is_file()]
            return any(sealed.encode() in path.read_bytes() for path in files)

        await eventually(lambda: not on_disk(), "the sealed secret to leave the database and its WAL", seconds=15)


# ---- 5. strict types and bounded numbers ------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "input": "a\u0000b"}, "input"),
        ({"model": "m\u0000", "input": "hi"}, "model"),
        ({"model": "m", "input": "hi", "stream": "yes"}, "stream"),
        ({"model": "m", "input": "hi", "background": 1}, "background"),
        ({"model": "m", "input": "hi", "max_output_tokens": 2**70}, "max_output_tokens"),
        ({"model": "m", "input": "hi", "max_output_tokens": 10**7}, "max_output_tokens"),
        ({"model": "m", "input": "hi", "temperature": "1"}, "temperature"),
        ({"model": "m", "input": "hi", "top_logprobs": 1e300}, "top_logprobs"),
    ],
)
async def test_wrong_types_and_huge_numbers_are_refused(stack: Stack, body: dict, param: str):
    before = await response_rows(stack)
    refused(await post_raw(stack, json.dumps(body).encode()), 400, param)
    assert await response_rows(stack) == before


async def test_approve_must_be_a_boolean(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    response = await sdk.responses.create(model=model, input="hi")
    answer = await post_raw(
        stack, b'{"approval_request_id": "mcpr_1", "approve": "yes"}', f"/v1/responses/{response.id}/approvals"
    )
    refused(answer, 400, "approve")


@pytest.mark.parametrize("after", [str(10**23), "-2", "1e3", "x"])
async def test_starting_after_out_of_range_is_refused(stack: Stack, sdk: openai.AsyncOpenAI, model: str, after: str):
    started = await sdk.responses.create(model=model, input="hi", background=True)
    async with stack.http() as http:
        answer = await http.get(f"/v1/responses/{started.id}", params={"stream": "true", "starting_after": after})
    refused(answer, 400, "starting_after")


async def test_a_cancel_is_final_even_when_it_races_an_approval(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    """Approve and cancel at once, five times: once the cancel is answered no tool call
    starts, and a cancelled response has no item in progress."""
    async with httpx.AsyncClient(base_url=str(sdk.base_url), timeout=60) as http:
        for attempt in range(5):
            name = f"{model}-{attempt}"
            backend.script(name, [Reply(tool_calls=[("slow", {"seconds": 0.3})]), Reply(text="ok")])
            started = await sdk.responses.create(
                model=name, input="go", tools=[_mcp(mcp_server, "always")], background=True
            )
            waiting = await until_awaiting_approval(sdk, started.id)
            request = next(item for item in waiting.output if item.type == "mcp_approval_request")
            approving = http.post(
                f"/responses/{started.id}/approvals", json={"approval_request_id": request.id, "approve": True}
            )
            cancelling = http.post(f"/responses/{started.id}/cancel")
            _, cancelled = await asyncio.gather(approving, cancelling)
            calls_when_answered = len(mcp_server.calls_of("slow"))
            final = await until_terminal(sdk, started.id)
            if cancelled.status_code == 200:
                assert cancelled.json()["status"] == "cancelled"
                assert final.status == "cancelled"
                assert all(getattr(item, "status", None) not in ("in_progress", "calling") for item in final.output), (
                    final.output
                )
            await asyncio.sleep(0.5)
            assert len(mcp_server.calls_of("slow")) == calls_when_answered, "a tool call started after the cancel"


# ---- 6. leftovers -------------------------------------------------------------------------


async def test_an_unstored_response_leaves_nothing_once_answered(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="x" * (PARK_ITEM_BYTES * 4))])
    response = await sdk.responses.create(model=model, input="hi", store=False)
    assert response.output_text == "x" * (PARK_ITEM_BYTES * 4)
    await eventually(lambda: _no_rows_left(stack, response.id), "the unstored response's rows to go")


async def test_an_abandoned_unstored_stream_is_swept(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    from worker.retention import Retention
    from worker.roles import opened_store

    backend.script(model, [Reply(text="a long answer that nobody reads", chunk_delay=0.05)])
    async with stack.http() as http:
        async with http.stream(
            "POST", "/v1/responses", json={"model": model, "input": "hi", "stream": True, "store": False}
        ) as events:
            async for line in events.aiter_lines():
                if line.startswith("data:"):
                    response_id = json.loads(line[5:])["response"]["id"]
                    break

    # The client is gone; the response ends all the same, its log waits for no one.
    async def ended_with_its_log() -> bool:
        return (
            "events.response_id" in await rows_left(stack, response_id)
            and await _status(stack, response_id) == "completed"
        )

    await eventually(ended_with_its_log, "the abandoned response to end")
    async with opened_store(stack.settings) as repository:
        retention = Retention(repository.responses, repository.events, unstored_seconds=3600, retention_days=0)
        await retention.sweep()
        assert await rows_left(stack, response_id), "swept before its time"
        retention.unstored_seconds = 0
        await retention.sweep()
    assert await rows_left(stack, response_id) == {}


async def test_an_event_log_whose_response_is_gone_is_swept_in_its_turn(stack: Stack):
    """Each pass looks at the next 200 logs only (its cost does not grow with the responses
    that wait), and going round, it finds every log left without its response."""
    from worker.retention import Retention
    from worker.roles import opened_store

    ghost = "resp_gone0000000000000000000000000000000000000000"
    await store_probe.execute(
        stack.settings.database_url,
        "INSERT INTO events (response_id, sequence_number, type, data) "
        f"VALUES ('{ghost}', 0, 'response.created', '{{}}')",
    )
    logs = await store_probe.value(stack.settings.database_url, "SELECT COUNT(DISTINCT response_id) FROM events")
    async with opened_store(stack.settings) as repository:
        retention = Retention(repository.responses, repository.events, unstored_seconds=3600, retention_days=0)
        for _ in range(logs // 200 + 2):
            await retention.sweep()
    assert (
        await store_probe.value(
            stack.settings.database_url, "SELECT COUNT(*) FROM events WHERE response_id = :id", id=ghost
        )
        == 0
    )


async def _gone(stack: Stack, response_id: str) -> bool:
    return not await has_workflow(stack, response_id)


async def _status(stack: Stack, response_id: str) -> str | None:
    return await store_probe.value(
        stack.settings.database_url, "SELECT status FROM responses WHERE id = :id", id=response_id
    )


async def _no_rows_left(stack: Stack, response_id: str) -> bool:
    return not await rows_left(stack, response_id)


async def test_delete_removes_everything_the_response_left(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, mcp_server: McpTestServer, model: str
):
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/y"})]), Reply(text="done")])
    tools = [_mcp(mcp_server, "always")]
    asked = await sdk.responses.create(model=model, input="go", tools=tools)
    request = next(item for item in asked.output if item.type == "mcp_approval_request")
    answered = await sdk.responses.create(
        model=model,
        previous_response_id=asked.id,
        tools=tools,
        input=[{"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}],
    )
    for response_id in (answered.id, asked.id):
        assert await rows_left(stack, response_id)
        await sdk.responses.delete(response_id)
        assert await rows_left(stack, response_id) == {}
    assert (
        await store_probe.value(
            stack.settings.database_url,
            "SELECT COUNT(*) FROM approval_decisions WHERE approval_request_id = :id",
            id=request.id,
        )
        == 0
    )


async def test_retention_deletes_old_responses_and_their_histories(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    """On a store of its own: a sweep deletes every expired response of the store (oldest
    first, 100 a pass), and Temporal deletes histories one at a time. The sweep runs as of a
    moment between the two responses' ages (its clock), however long the machine takes to get
    to it: on a busy machine the "new" one was already older than the window when it ran."""
    from response_service.history_eraser import HistoryEraser
    from worker.retention import Retention
    from worker.roles import opened_store

    async with running_stack(temporal_address, backend, store) as stack, stack.sdk() as sdk:
        old = await sdk.responses.create(model=model, input="old")
        await asyncio.sleep(2.5)
        new = await sdk.responses.create(model=model, input="new")
        async with opened_store(stack.settings) as repository:
            retention = Retention(
                repository.responses,
                repository.events,
                unstored_seconds=3600,
                retention_days=2 / 86400,
                clock=lambda: new.created_at + 0.5,  # `old` is 2.5 s older: past the window; `new` within it
            )
            await retention.sweep()
            await HistoryEraser(repository.history_deletions, stack.client).sweep()
        assert await rows_left(stack, old.id) == {}
        # The server deletes a history by a task it runs once its queue's ack level has passed the
        # workflow's close (every second on the tests' dev server: `tests/support/stack.py`).
        await eventually(lambda: _gone(stack, old.id), "Temporal to delete the old history", seconds=60)
        assert await rows_left(stack, new.id) and await has_workflow(stack, new.id)
        with pytest.raises(openai.NotFoundError):
            await sdk.responses.retrieve(old.id)


async def test_the_orphan_sweep_skips_an_unreadable_row(stack: Stack):
    from response_service.runner import ResponseRunner
    from worker.roles import opened_store, orphan_sweeper

    now_us = time.time_ns() // 1000 - 60_000_000
    await store_probe.execute(
        stack.settings.database_url,
        "INSERT INTO responses (id, created_at, sort_key, status, stored, data) VALUES "
        f"('resp_unreadable', 0, {now_us}, 'in_progress', TRUE, '{{\"not\": \"a response\"}}')",
    )
    try:
        async with opened_store(stack.settings) as repository:
            runner = ResponseRunner(
                stack.client,
                stack.settings.task_queue,
                stack.settings.execution,
                responses=repository.responses,
                history_deletions=repository.history_deletions,
                local_worker=False,
                outcomes=Outcomes(),
            )
            assert "resp_unreadable" not in await orphan_sweeper(repository, runner, grace_seconds=0).sweep()
    finally:
        await store_probe.execute(stack.settings.database_url, "DELETE FROM responses WHERE id = 'resp_unreadable'")


async def test_unicode_line_separators_do_not_cut_stream_events(stack: Stack, backend: ScriptedBackend, model: str):
    """U+0085, U+2028 and U+2029 are text to JSON and SSE, but line breaks to many clients'
    line splitters (Python's `str.splitlines`): each event must stay one line anyway."""
    backend.script(model, [Reply(text="a\u2028b\x85c\u2029d")])
    body = {"model": model, "input": "x\u2028y", "stream": True, "metadata": {"k": "\x85\u2028\u2029"}}
    async with stack.http() as http:
        async with http.stream("POST", "/v1/responses", json=body) as answer:
            data = [json.loads(line[5:]) async for line in answer.aiter_lines() if line.startswith("data:")]
    assert data[-1]["type"] == "response.completed"
    assert data[-1]["response"]["metadata"] == {"k": "\x85\u2028\u2029"}
    assert data[-1]["response"]["output"][0]["content"][0]["text"] == "a\u2028b\x85c\u2029d"
