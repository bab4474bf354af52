"""Nothing readable at rest: Temporal's history holds no user content (the payload codec),
the codec endpoint lets an operator read it again, deleting a response erases its history,
and every sealed blob opens only for its own purpose and project."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import stat
import uuid
from pathlib import Path

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from access.keys import KeyStore
from models.errors import SealedElsewhereError
from sealing.keyring import KeyRing, new_master_key
from sealing.payload_codec import EncryptedPayloads
from store.opening import open_database
from tests.support.dev_stack import DevStack
from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, has_workflow, running_stack
from tests.support.waiting import eventually, until_awaiting_approval, until_terminal
from worker.dev import temporal_binary


async def history_json(stack: Stack, response_id: str, *codec: str) -> str:
    """`temporal workflow show --output json`, as an operator runs it (with `codec`: its
    `--codec-endpoint` and `--codec-auth` flags), while this loop serves the codec endpoint."""
    shown = await asyncio.create_subprocess_exec(
        temporal_binary(),
        "workflow",
        "show",
        "--workflow-id",
        response_id,
        "--output",
        "json",
        "--address",
        stack.settings.temporal_address or "",
        *codec,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(shown.communicate(), 60)
    assert shown.returncode == 0, err.decode()
    return out.decode()


def readable(history: str) -> str:
    """The history's JSON with every base64 value (payload data and metadata) decoded too, so
    a search finds what a payload holds in clear."""
    texts = [history]

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and len(value) >= 4:
            try:
                texts.append(base64.b64decode(value, validate=True).decode("utf-8", errors="replace"))
            except ValueError:
                pass

    walk(json.loads(history))
    return "\n".join(texts)


async def test_no_user_content_is_readable_in_temporal_history(
    stack: Stack,
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
    mcp_server: McpTestServer,
):
    """A marker sent as input, instructions, an MCP server URL's token, tool arguments, tool
    output, model output and an approval's reason: in none of the history's events; through
    the codec endpoint, there again."""
    marker = f"MARKER{uuid.uuid4().hex[:10]}"
    backend.script(
        model,
        [
            Reply(tool_calls=[("weather", {"city": marker}), ("delete_file", {"path": marker})]),
            Reply(text=f"it is sunny in {marker}"),
        ],
    )
    tool = {
        "type": "mcp",
        "server_label": "tools",
        "server_url": f"{mcp_server.url}?token={marker}",
        "require_approval": {"always": {"tool_names": ["delete_file"]}},
    }
    created = await sdk.responses.create(
        model=model, input=f"weather in {marker}?", instructions=f"be {marker}", tools=[tool], background=True
    )
    request = (await until_awaiting_approval(sdk, created.id)).output[-1]
    async with stack.http() as http:
        decided = await http.post(
            f"/v1/responses/{created.id}/approvals",
            json={"approval_request_id": request.id, "approve": False, "reason": f"not {marker}"},
        )
        assert decided.status_code == 200, decided.text
    final = await until_terminal(sdk, created.id)
    assert final.status == "completed" and final.output_text == f"it is sunny in {marker}"
    told = json.dumps(backend.requests(model)[-1]["messages"])
    assert f"sunny in {marker}" in told and f"not {marker}" in told, "the scenario did not carry the marker"

    encrypted = readable(await history_json(stack, created.id))
    assert "binary/encrypted" in encrypted
    assert marker not in encrypted
    decoded = readable(
        await history_json(stack, created.id, "--codec-endpoint", stack.base_url.removesuffix("/v1") + "/codec")
    )
    assert "binary/encrypted" not in decoded
    missing = [
        part
        for part in (f"be {marker}", f"token={marker}", f"sunny in {marker}", f"not {marker}")
        if part not in decoded
    ]
    assert not missing, f"the codec endpoint did not give back {missing}"


async def test_deleting_a_response_erases_its_history(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    response = await sdk.responses.create(model=model, input="to be forgotten")
    assert await has_workflow(stack, response.id)
    await sdk.responses.delete(response.id)
    await eventually(lambda: _gone(stack, response.id), "the history to be erased", seconds=60)


async def test_an_unstored_response_leaves_no_history(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    response = await sdk.responses.create(model=model, input="not kept", store=False)
    async with sdk.responses.stream(model=model, input="not kept either", store=False) as stream:
        streamed = await stream.get_final_response()
    await asyncio.gather(
        eventually(lambda: _gone(stack, response.id), "the unstored response's history to be erased", seconds=60),
        eventually(lambda: _gone(stack, streamed.id), "the unstored stream's history to be erased", seconds=60),
    )


async def test_deleting_a_conversation_erases_its_responses_histories(
    stack: Stack, sdk: openai.AsyncOpenAI, model: str
):
    conversation = await sdk.conversations.create()
    first = await sdk.responses.create(model=model, input="one", conversation=conversation.id)
    second = await sdk.responses.create(model=model, input="two", conversation=conversation.id)
    other = await sdk.responses.create(model=model, input="elsewhere")
    await sdk.conversations.delete(conversation.id)
    for response in (first, second):
        await eventually(
            lambda gone=response.id: _gone(stack, gone), "the conversation's histories to be erased", seconds=90
        )
    assert await has_workflow(stack, other.id), "a response of no conversation lost its history"


async def _gone(stack: Stack, response_id: str) -> bool:
    return not await has_workflow(stack, response_id)


# ---- the codec endpoint -----------------------------------------------------------------------


@pytest.mark.one_store  # the codec's, not the store's
async def test_the_codec_endpoint_needs_codec_auth_once_the_server_has_keys(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
):
    async with running_stack(temporal_address, backend, store) as stack:
        ring = KeyRing.parse(stack.settings.secrets_key)
        sealed = await EncryptedPayloads(ring).encode([_payload(b'"hello"')])
        body = {"payloads": [_json_payload(payload) for payload in sealed]}
        async with stack.http() as http:
            opened = await http.post("/codec/decode", json=body)
            assert opened.status_code == 200, opened.text  # open: no keys yet
            assert opened.json()["payloads"][0]["data"] == "ImhlbGxvIg=="
            db = open_database(store.url)
            try:
                _record, key = await KeyStore(db).create("acme", approver=False)
            finally:
                await db.close()

            async def refused_now() -> httpx.Response | None:
                answer = await http.post("/codec/decode", json=body)
                return answer if answer.status_code == 401 else None

            refused = await eventually(refused_now, "the codec endpoint to close (API keys are read every 2 s)")
            assert "CODEC_AUTH" in refused.json()["error"]["message"]
            # An API key is not enough: the endpoint hands out every project's plaintext.
            refused = await http.post("/codec/decode", json=body, headers={"authorization": f"Bearer {key}"})
            assert refused.status_code == 401


@pytest.mark.one_store  # the codec's, not the store's
async def test_the_codec_endpoint_answers_browsers_of_its_allowed_origins_only(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
):
    allowed, other = "http://127.0.0.1:8233", "http://evil.example"
    async with running_stack(temporal_address, backend, store, codec_allowed_origins=[allowed]) as stack:
        async with stack.http() as http:
            for origin, answered in ((allowed, True), (other, False)):
                asked = {
                    "origin": origin,
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type,x-namespace",
                }
                preflight = await http.options("/codec/decode", headers=asked)
                assert preflight.status_code == 204
                assert (preflight.headers.get("access-control-allow-origin") == origin) == answered
                decoded = await http.post("/codec/decode", json={"payloads": []}, headers={"origin": origin})
                assert decoded.status_code == 200 and decoded.json() == {"payloads": []}
                assert (decoded.headers.get("access-control-allow-origin") == origin) == answered


CODEC_BODIES = st.one_of(
    st.binary(max_size=200),
    st.dictionaries(
        st.sampled_from(["payloads", "x"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
            max_leaves=10,
        ),
        max_size=2,
    ).map(lambda body: json.dumps(body).encode()),
)


@pytest.mark.one_store  # the codec's, not the store's
async def test_the_codec_endpoint_refuses_any_malformed_body_with_a_400(stack: Stack):
    base_url = stack.base_url.removesuffix("/v1")

    def fuzz() -> None:  # in a thread: this loop serves the endpoint meanwhile
        @settings(max_examples=60, deadline=None, database=None)
        @given(body=CODEC_BODIES)
        def one(body: bytes) -> None:
            with httpx.Client(base_url=base_url, timeout=30) as http:
                answer = http.post("/codec/decode", content=body, headers={"content-type": "application/json"})
            assert answer.status_code in (200, 400), answer.text
            if answer.status_code == 400:
                error = answer.json()["error"]
                assert error["type"] == "invalid_request_error" and error["message"]

        one()

    await asyncio.to_thread(fuzz)


def _payload(data: bytes) -> object:
    from temporalio.api.common.v1 import Payload

    return Payload(metadata={"encoding": b"json/plain"}, data=data)


def _json_payload(payload: object) -> dict:
    from google.protobuf import json_format

    return json_format.MessageToDict(payload)


# ---- sealed blobs -----------------------------------------------------------------------------


async def test_a_rotated_ring_still_reads_old_payloads():
    old, new = new_master_key(), new_master_key()
    payload = _payload(b'{"a": 1}')
    sealed = await EncryptedPayloads(KeyRing.parse(old)).encode([payload])
    assert await EncryptedPayloads(KeyRing.parse(f"{new},{old}")).decode(sealed) == [payload]
    with pytest.raises(SealedElsewhereError):
        await EncryptedPayloads(KeyRing.parse(new)).decode(sealed)
    # Histories from before the codec (in clear) still read.
    assert await EncryptedPayloads(KeyRing.parse(new)).decode([payload]) == [payload]


# ---- dev: the Temporal UI reads through the codec; the data dir is private ---------------------


def test_devs_temporal_ui_shows_what_the_codec_encrypted(tmp_path: Path, backend: ScriptedBackend):
    """The UI `dev` starts is pointed at its codec endpoint: in the browser, a response's
    history shows the marker its payloads hold encrypted (its instructions, in the workflow's
    input: the result is the response's id and status only)."""
    from tests.support.browser import browser, wait_until

    marker = f"MARKER{uuid.uuid4().hex[:10]}"
    dev = DevStack(tmp_path / "data", backend)
    try:
        dev.start()
        ui = re.search(r"Temporal UI: (http://127\.0\.0\.1:\d+)", dev.log.read_text())
        assert ui, dev.log.read_text()
        response = dev.sdk().responses.create(model="echo", input="say hi", instructions=f"be {marker}")
        assert response.status == "completed"
        with browser() as page:
            page.get(f"{ui.group(1)}/namespaces/default/workflows/{response.id}")
            wait_until(
                lambda: marker in page.find_element("tag name", "body").text,
                "the UI to show the decoded marker",
                seconds=60,
            )
    finally:
        if dev.process is not None and dev.process.poll() is None:
            dev.stop()


def test_devs_data_dir_is_private_to_its_user(tmp_path: Path, backend: ScriptedBackend):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    (data / "left-over.txt").write_text("from before")
    (data / "left-over.txt").chmod(0o644)
    dev = DevStack(data, backend)
    try:
        dev.start()
        dev.sdk().responses.create(model="echo", input="hello")
        assert dev.stop() == 0
    finally:
        if dev.process is not None and dev.process.poll() is None:
            dev.stop()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    files = {path.name: stat.S_IMODE(path.stat().st_mode) for path in data.rglob("*") if path.is_file()}
    assert {"temporal.db", "responses.db", "secrets.key", "left-over.txt"} <= set(files)
    assert {name: mode for name, mode in files.items() if mode & 0o077} == {}, "a file others may read"
