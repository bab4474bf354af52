"""Who may do what: API keys and their projects, approvers, and approvals bound to their
requests. Every route is run as two projects; nothing of one is visible to the other, and
what the other gets is exactly what an unknown id gets."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator

import openai
import pytest

from tests.support.histories import decoded_history
from tests.support.house import modules_loaded_by
from tests.support.keys import as_key, http_as, make_key
from tests.support.mcp_servers import McpTestServer
from tests.support.processes import CLI
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack, empty_store, running_stack
from tests.support.waiting import until_awaiting_approval


@pytest.fixture(scope="module")
async def keyed(
    temporal_address: str,
    backend: ScriptedBackend,
    store_kind: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[Stack, dict[str, str]]]:
    """A stack of its own (keys close a server for everyone) with keys of two projects."""
    store = empty_store(store_kind, tmp_path_factory.mktemp("keyed"), request)
    async with running_stack(temporal_address, backend, store) as stack:
        alpha, alpha_id = make_key(stack, "alpha")
        beta, _ = make_key(stack, "beta")
        approver, approver_id = make_key(stack, "alpha", approver=True)
        yield (
            stack,
            {"alpha": alpha, "alpha_id": alpha_id, "beta": beta, "approver": approver, "approver_id": approver_id},
        )


async def test_requests_need_a_valid_key_once_one_exists(keyed):
    stack, keys = keyed
    async with http_as(stack, None) as anonymous:
        missing = await anonymous.get("/v1/responses")
        assert (await anonymous.get("/health")).status_code == 200, "health needs no key"
    assert missing.status_code == 401
    assert missing.json() == {
        "error": {
            "message": (
                "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer "
                "auth (i.e. Authorization: Bearer YOUR_KEY)."
            ),
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
    wrong = "sk-dr-" + "x" * 43
    async with http_as(stack, wrong) as guessing:
        refused = await guessing.post("/v1/responses", json={"model": "m", "input": "hi"})
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "invalid_api_key"
    assert wrong not in refused.text
    with pytest.raises(openai.AuthenticationError):
        await as_key(stack, wrong).responses.create(model="m", input="hi")
    response = await as_key(stack, keys["alpha"]).responses.create(model="m", input="hi")
    assert response.status == "completed"


async def test_a_new_key_works_at_once_and_a_revoked_one_stops_within_seconds(keyed):
    stack, _ = keyed
    key, key_id = make_key(stack, "gamma")
    client = as_key(stack, key)
    made = await client.responses.create(model="m", input="hi")
    assert made.status == "completed"
    revoked = subprocess.run(
        [CLI, "keys", "revoke", key_id, "--database-url", stack.settings.database_url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert revoked.returncode == 0, revoked.stderr
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            await client.responses.retrieve(made.id)
        except openai.AuthenticationError:
            break
        await asyncio.sleep(0.2)
    else:
        pytest.fail("a revoked key still worked after 10 s")
    listed = subprocess.run(
        [CLI, "keys", "list", "--database-url", stack.settings.database_url], capture_output=True, text=True, timeout=60
    ).stdout
    assert key_id in listed and "revoked" in listed and key not in listed and "project=gamma" in listed


def test_the_keys_command_finds_the_store_in_database_url_and_loads_only_the_store(tmp_path):
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    with_url = {**os.environ, "DATABASE_URL": url}
    made = subprocess.run(
        [CLI, "keys", "create", "--project", "delta"],
        env=with_url,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    listed = subprocess.run(
        [CLI, "keys", "list", "--database-url", url], capture_output=True, text=True, timeout=60
    ).stdout
    assert "project=delta" in listed
    assert not (tmp_path / ".durable-responses").exists()
    # the whole configuration (worker.settings) costs 0.7 s of CPU, and `keys` needs only the URL
    assert "worker.settings" not in modules_loaded_by("worker.cli", "access.commands")


async def _alphas_things(stack: Stack, keys: dict[str, str], backend: ScriptedBackend) -> dict[str, str]:
    """One of everything, made by project alpha."""
    alpha = as_key(stack, keys["alpha"])
    stored = await alpha.responses.create(model="m", input="alpha's secret words")
    model = f"slow-{uuid.uuid4().hex[:6]}"
    backend.script(model, [Reply(text="still thinking", delay=30)])
    running = await alpha.responses.create(model=model, input="alpha's running words", background=True)
    conversation = await alpha.conversations.create(
        items=[{"type": "message", "role": "user", "content": "alpha's conversation"}]
    )
    items = await alpha.conversations.items.list(conversation.id)
    uploaded = await alpha.files.create(file=("alpha.md", b"alpha's secret document"), purpose="assistants")
    store = await alpha.vector_stores.create(name="alpha's store", file_ids=[uploaded.id])
    return {
        "file": uploaded.id,
        "vector_store": store.id,
        "response": stored.id,
        "running": running.id,
        "item": stored.output[0].id,
        "input_item": (await alpha.responses.input_items.list(stored.id)).data[0].id,
        "conversation": conversation.id,
        "conversation_item": items.data[0].id,
    }


ROUTES = [
    # (method, path, body): every route that names something, with {placeholders}
    ("GET", "/v1/responses/{response}", None),
    ("GET", "/v1/responses/{running}?stream=true", None),
    ("GET", "/v1/responses/{response}/input_items", None),
    ("POST", "/v1/responses/{running}/cancel", None),
    ("POST", "/v1/responses/{running}/approvals", {"approval_request_id": "mcpr_x", "approve": True}),
    ("DELETE", "/v1/responses/{response}", None),
    ("POST", "/v1/responses", {"model": "m", "input": "hi", "previous_response_id": "{response}"}),
    ("POST", "/v1/responses", {"model": "m", "input": "hi", "conversation": "{conversation}"}),
    ("POST", "/v1/responses", {"model": "m", "input": [{"type": "item_reference", "id": "{item}"}]}),
    ("POST", "/v1/responses", {"model": "m", "input": [{"type": "item_reference", "id": "{input_item}"}]}),
    ("GET", "/v1/conversations/{conversation}", None),
    ("POST", "/v1/conversations/{conversation}", {"metadata": {"k": "v"}}),
    ("GET", "/v1/conversations/{conversation}/items", None),
    (
        "POST",
        "/v1/conversations/{conversation}/items",
        {"items": [{"type": "message", "role": "user", "content": "x"}]},
    ),
    ("GET", "/v1/conversations/{conversation}/items/{conversation_item}", None),
    ("DELETE", "/v1/conversations/{conversation}/items/{conversation_item}", None),
    ("DELETE", "/v1/conversations/{conversation}", None),
    ("POST", "/v1/conversations", {"items": [{"type": "item_reference", "id": "{conversation_item}"}]}),
    ("GET", "/v1/responses?after={response}", None),
    ("GET", "/v1/files/{file}", None),
    ("GET", "/v1/files/{file}/content", None),
    ("GET", "/v1/files?after={file}", None),
    ("GET", "/v1/vector_stores/{vector_store}", None),
    ("POST", "/v1/vector_stores/{vector_store}", {"name": "renamed"}),
    ("POST", "/v1/vector_stores/{vector_store}/search", {"query": "secret"}),
    ("GET", "/v1/vector_stores/{vector_store}/files", None),
    ("GET", "/v1/vector_stores/{vector_store}/files/{file}", None),
    ("POST", "/v1/vector_stores/{vector_store}/files", {"file_id": "{file}"}),
    ("POST", "/v1/vector_stores/{vector_store}/file_batches", {"file_ids": ["{file}"]}),
    ("GET", "/v1/vector_stores?after={vector_store}", None),
    ("POST", "/v1/vector_stores", {"file_ids": ["{file}"]}),
    (
        "POST",
        "/v1/responses",
        {"model": "m", "input": "hi", "tools": [{"type": "file_search", "vector_store_ids": ["{vector_store}"]}]},
    ),
    ("DELETE", "/v1/vector_stores/{vector_store}/files/{file}", None),
    ("DELETE", "/v1/vector_stores/{vector_store}", None),
    ("DELETE", "/v1/files/{file}", None),
]


def _filled(value, names: dict[str, str]):  # noqa: ANN001, ANN202
    text = json.dumps(value) if value is not None else None
    for name, identifier in names.items():
        text = text.replace("{" + name + "}", identifier) if text else text
    return json.loads(text) if text else None


def _path(path: str, names: dict[str, str]) -> str:
    for name, identifier in names.items():
        path = path.replace("{" + name + "}", identifier)
    return path


async def test_no_route_shows_one_project_anything_of_another(keyed, backend: ScriptedBackend):
    """Beta, on each of alpha's ids, gets exactly what an unknown id of the same shape gets;
    alpha's things are untouched afterwards; alpha's listings never show beta's."""
    stack, keys = keyed
    names = await _alphas_things(stack, keys, backend)
    unknown = {name: identifier[:-6] + "000000" for name, identifier in names.items()}
    async with http_as(stack, keys["beta"]) as beta:
        for method, path, body in ROUTES:
            answers = []
            for ids in (names, unknown):
                answer = await beta.request(method, _path(path, ids), json=_filled(body, ids))
                text = answer.text
                for identifier in ids.values():  # the message may quote the id it was given
                    text = text.replace(identifier, "ID")
                answers.append((answer.status_code, text))
            assert answers[0] == answers[1], (method, path, answers)
            assert answers[0][0] in (400, 404), (method, path, answers)
            assert "alpha" not in answers[0][1]
        for listing in ("/v1/responses", "/v1/files", "/v1/vector_stores"):
            listed = (await beta.get(listing)).json()["data"]
            assert not {item["id"] for item in listed} & set(names.values()), listing
    alpha = as_key(stack, keys["alpha"])
    assert (await alpha.responses.retrieve(names["response"])).output_text
    assert (await alpha.responses.retrieve(names["running"])).status in ("queued", "in_progress")
    assert (await alpha.conversations.retrieve(names["conversation"])).id == names["conversation"]
    assert (await alpha.files.retrieve(names["file"])).filename == "alpha.md"
    assert (await alpha.vector_stores.retrieve(names["vector_store"])).name == "alpha's store"
    beta_response = await as_key(stack, keys["beta"]).responses.create(model="m", input="beta's words")
    async with http_as(stack, keys["alpha"]) as alpha_http:
        assert (await alpha_http.get(f"/v1/responses/{beta_response.id}")).status_code == 404
        alphas = {item["id"] for item in (await alpha_http.get("/v1/responses?limit=100")).json()["data"]}
        assert names["response"] in alphas and beta_response.id not in alphas
    await alpha.responses.cancel(names["running"])


async def test_an_approver_key_decides_and_reads_what_waits_nothing_else(
    keyed, mcp_server: McpTestServer, backend: ScriptedBackend
):
    stack, keys = keyed
    model = f"approve-{uuid.uuid4().hex[:6]}"
    backend.script(model, [Reply(tool_calls=[("add", {"a": 2, "b": 3})]), Reply(text="5")])
    tools = [{"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "always"}]
    alpha = as_key(stack, keys["alpha"])
    waiting = await alpha.responses.create(model=model, input="add", tools=tools, background=True)
    waiting = await until_awaiting_approval(alpha, waiting.id)
    request = waiting.output[-1]
    async with http_as(stack, keys["approver"]) as approver:
        for method, path, body in (
            ("POST", "/v1/responses", {"model": "m", "input": "hi"}),
            ("GET", "/v1/responses", None),
            ("POST", f"/v1/responses/{waiting.id}/cancel", None),
            ("GET", f"/v1/responses/{waiting.id}/input_items", None),
            ("POST", "/v1/conversations", {}),
        ):
            refused = await approver.request(method, path, json=body)
            assert refused.status_code == 403, (method, path, refused.text)
        done = await alpha.responses.create(model="m", input="not waiting")
        assert (await approver.get(f"/v1/responses/{done.id}")).status_code == 404
        seen = await approver.get(f"/v1/responses/{waiting.id}")
        assert seen.status_code == 200 and seen.json()["status"] == "in_progress", seen.text
    # The API runs in this process's loop: the CLI runs beside it, not blocking it.
    decided = await asyncio.create_subprocess_exec(
        CLI,
        "approve",
        waiting.id,
        request.id,
        "--api-url",
        stack.base_url.removesuffix("/v1"),
        env={"DURABLE_RESPONSES_API_KEY": keys["approver"], "PATH": "/usr/bin:/bin"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(decided.communicate(), 60)
    assert decided.returncode == 0, stderr
    deadline = time.monotonic() + 30
    while (ended := await alpha.responses.retrieve(waiting.id)).status == "in_progress" and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert ended.status == "completed" and ended.output_text == "5"
    history = await decoded_history(stack.client, waiting.id)
    updates = [
        event for event in history.events if event.HasField("workflow_execution_update_accepted_event_attributes")
    ]
    assert len(updates) == 1
    payload = updates[0].workflow_execution_update_accepted_event_attributes.accepted_request.input.args.payloads[0]
    assert json.loads(payload.data)["decided_by"] == keys["approver_id"]


async def test_an_approval_request_of_another_project_cannot_be_answered(
    keyed, mcp_server: McpTestServer, backend: ScriptedBackend
):
    """Beta copies alpha's pending request (id and all) into a response of its own: refused
    as unknown; alpha's own decision afterwards still runs the call."""
    stack, keys = keyed
    model = f"bind-{uuid.uuid4().hex[:6]}"
    backend.script(model, [Reply(tool_calls=[("add", {"a": 1, "b": 1})])])
    tools = [{"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "always"}]
    alpha = as_key(stack, keys["alpha"])
    asked = await alpha.responses.create(model=model, input="add", tools=tools)
    request = asked.output[-1]
    assert request.type == "mcp_approval_request"
    copied = request.model_dump(mode="json", exclude_none=True)
    answer = {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}
    calls_before = len(mcp_server.calls_of("add"))
    async with http_as(stack, keys["beta"]) as beta:
        stolen = await beta.post("/v1/responses", json={"model": model, "tools": tools, "input": [copied, answer]})
        unknown = await beta.post(
            "/v1/responses",
            json={
                "model": model,
                "tools": tools,
                "input": [copied | {"id": "mcpr_" + "0" * 48}, answer | {"approval_request_id": "mcpr_" + "0" * 48}],
            },
        )
    assert stolen.status_code == 400 and "is open" in stolen.json()["error"]["message"]
    assert unknown.status_code == 200, "a request the server never stored is the client's own"
    async with http_as(stack, keys["alpha"]) as alpha_http:
        forged = await alpha_http.post(
            "/v1/responses",
            json={"model": model, "tools": tools, "input": [copied | {"arguments": '{"a": 100, "b": 100}'}, answer]},
        )
    assert forged.status_code == 400, "an id borrowed for other arguments is not that request"
    backend.script(model, [Reply(text="2")])
    approved = await alpha.responses.create(model=model, tools=tools, previous_response_id=asked.id, input=[answer])
    assert approved.status == "completed" and approved.output_text == "2"
    assert len(mcp_server.calls_of("add")) == calls_before + 2  # alpha's call, and beta's own unknown one


async def test_the_agents_sdk_runs_with_a_key_unchanged(keyed, backend: ScriptedBackend, model: str):
    """The Agents SDK sends its client's key like any OpenAI client: a function-tool loop runs
    across a chain of the key's project."""
    import agents

    stack, keys = keyed

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    backend.script(model, [Reply(tool_calls=[("get_weather", {"city": "Lyon"})]), Reply(text="Sunny in Lyon.")])
    agent = agents.Agent(
        name="weather",
        instructions="Answer about the weather.",
        tools=[get_weather],
        model=agents.OpenAIResponsesModel(model=model, openai_client=as_key(stack, keys["alpha"])),
    )
    result = await agents.Runner.run(agent, "Weather in Lyon?")
    assert result.final_output == "Sunny in Lyon."
    anonymous = agents.Agent(
        name="nobody", model=agents.OpenAIResponsesModel(model=model, openai_client=as_key(stack, "sk-dr-not-a-key"))
    )
    with pytest.raises(openai.AuthenticationError):
        await agents.Runner.run(anonymous, "hi")
