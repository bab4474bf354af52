"""Nothing unbounded: replies from tenant-chosen URLs cost a few MiB at most, tool names are
made unique in linear time, a long reply is assembled in linear time, a chain stores each
message once, and a conversation has a most items it keeps."""

from __future__ import annotations

import asyncio
import json
import os
import time

import openai
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from models.requests import MAX_CLIENT_FUNCTIONS
from store.conversations import MAX_ITEMS
from tests.support import memory, store_probe
from tests.support.mcp_servers import McpTestServer
from tests.support.processes import kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack
from tests.support.threaded_server import ThreadedServer
from tests.support.tools import namespace_of

MEMORY_BOUND_MIB = 64
"""What reading an endless reply may cost, at most: its limit (12 MiB) and the copies made on
the way leave room above it for the noise of a process that is working (a bound of 20 failed
once in a newcomer's first run at 20.7), while a read without a bound costs the reply's whole
gigabyte."""


# ---- replies from tenant-chosen URLs ---------------------------------------------------------


@pytest.mark.one_store
async def test_an_endless_json_reply_from_an_mcp_server_costs_a_few_mib_and_fails_clearly(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    model: str,
):
    server = McpTestServer(endless_reply={"weather"}).start()
    normal = McpTestServer().start()
    tool = {"type": "mcp", "server_label": "tools", "server_url": server.url, "require_approval": "never"}
    warm = tool | {"server_url": normal.url}
    backend.script(
        model,
        [Reply(tool_calls=[("weather", {"city": "Oslo"})]), Reply(text="warm")] * 2
        + [Reply(tool_calls=[("weather", {"city": "Oslo"})]), Reply(text="the reply was too long")],
    )
    async with running_stack(temporal_address, backend, store, with_worker=False) as stack:
        worker = spawn_worker(stack)
        try:
            async with stack.sdk(timeout=90) as sdk:
                for _ in range(2):  # the same path, whole, twice: what the measure sees is the reply alone
                    await sdk.responses.create(model=model, input="warm up", tools=[warm])
                before = memory.reset_peak(worker.pid)
                began = time.monotonic()
                response = await sdk.responses.create(model=model, input="weather?", tools=[tool])
                took = time.monotonic() - began
                peak = memory.peak(worker.pid)
        finally:
            kill(worker)
            server.stop()
            normal.stop()
    call = response.output[1]
    assert call.type == "mcp_call" and call.status == "failed"
    assert "answered more than" in call.error.message and "MCP_MAX_RESULT_BYTES" in call.error.message
    assert response.output_text == "the reply was too long"
    grew = (peak - before) / 1024
    print(f"endless MCP reply: the worker grew {grew:.1f} MiB, the call ended after {took:.1f} s")
    assert grew < MEMORY_BOUND_MIB, f"the worker's memory grew {grew:.1f} MiB"
    assert took < 30


@pytest.mark.one_store
async def test_an_endless_reply_to_a_webhook_test_costs_nothing(stack: Stack, sdk: openai.AsyncOpenAI):
    async def endless(_request: Request) -> StreamingResponse:
        async def body():  # noqa: ANN202
            for _ in range(16384):
                yield b"x" * 65536
                await asyncio.sleep(0)

        return StreamingResponse(body(), media_type="application/json")

    receiver = ThreadedServer(Starlette(routes=[Route("/hook", endless, methods=["POST"])]), "endless").start()
    try:
        async with stack.http() as http:
            made = await http.post(
                "/v1/webhook_endpoints",
                json={
                    "name": "endless",
                    "url": f"http://127.0.0.1:{receiver.port}/hook",
                    "event_types": ["response.completed"],
                },
            )
            assert made.status_code == 200, made.text
            before = memory.reset_peak("self")
            began = time.monotonic()
            tested = await http.post(
                f"/v1/webhook_endpoints/{made.json()['id']}/test", json={"event_type": "response.completed"}
            )
            took = time.monotonic() - began
            peak = memory.peak("self")
    finally:
        receiver.stop()
    assert tested.status_code == 200 and tested.json()["status_code"] == 200, tested.text
    grew = (peak - before) / 1024
    assert grew < MEMORY_BOUND_MIB, f"memory grew {grew:.1f} MiB"
    assert took < 10


# ---- tool names ------------------------------------------------------------------------------


async def test_more_client_tools_than_a_request_may_offer_are_refused(sdk: openai.AsyncOpenAI, model: str):
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model=model, input="hi", tools=[namespace_of(12_000, "t" * 60)])
    assert refused.value.body["param"] == "tools" and str(MAX_CLIENT_FUNCTIONS) in refused.value.body["message"]


# ---- a long reply ----------------------------------------------------------------------------


# ---- chains and conversations ----------------------------------------------------------------


async def test_a_chain_stores_each_message_once(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    previous = None
    ids = []
    for turn in range(100):
        response = await sdk.responses.create(
            model=model, input=f"turn {turn} " + "x" * 200, previous_response_id=previous
        )
        previous = response.id
        ids.append(response.id)
    url = stack.settings.database_url
    chain = ", ".join(f"'{response_id}'" for response_id in ids)  # our own ids: safe to inline
    kept = await store_probe.value(
        url, f"SELECT SUM(length(CAST(messages AS TEXT))) FROM chat_contexts WHERE response_id IN ({chain})"
    )
    own = sum(
        [
            await store_probe.value(
                url, f"SELECT SUM(length(CAST(data AS TEXT))) FROM {table} WHERE response_id IN ({chain})"
            )
            for table in ("input_items", "output_items")
        ]
    )
    print(f"100 turns: chat contexts {kept} bytes, the turns' own items {own} bytes")
    assert kept <= 2 * own, (kept, own)
    # The last one still continues from all of them.
    last = await sdk.responses.create(model=model, input="and now?", previous_response_id=previous)
    assert last.status == "completed"


async def test_deleting_a_response_in_a_chain_keeps_its_followers_context(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
):
    first = await sdk.responses.create(model=model, input="one")
    second = await sdk.responses.create(model=model, input="two", previous_response_id=first.id)
    third = await sdk.responses.create(model=model, input="three", previous_response_id=second.id)
    await sdk.responses.delete(second.id)
    await sdk.responses.create(model=model, input="four", previous_response_id=third.id)
    sent = [message["content"] for message in backend.requests(model)[-1]["messages"]]
    assert sent == ["one", "echo: one", "two", "echo: two", "three", "echo: three", "four"]


async def test_a_conversation_keeps_at_most_max_items(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    conversation = await sdk.conversations.create()
    await store_probe.execute(
        stack.settings.database_url,
        *[
            "INSERT INTO conversation_items (conversation_id, position, item_id, data) VALUES "
            + ", ".join(
                f"('{conversation.id}', {position}, 'msg_{conversation.id}_{position}', "
                f"'{json.dumps({'type': 'message', 'role': 'user', 'content': 'x'})}')"
                for position in range(start, min(start + 1000, MAX_ITEMS))
            )
            for start in range(0, MAX_ITEMS, 1000)
        ],
    )
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model=model, input="one more", conversation=conversation.id)
    assert refused.value.body["param"] == "conversation" and refused.value.body["code"] == "conversation_full"
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.conversations.items.create(conversation.id, items=[{"role": "user", "content": "more"}])
    assert refused.value.body["param"] == "items"


# ---- small ones ------------------------------------------------------------------------------


@pytest.mark.one_store
async def test_an_image_url_at_a_private_address_is_refused(sdk: openai.AsyncOpenAI, model: str):
    for url in ("http://10.0.0.1/cat.png", "file:///etc/passwd", "http://169.254.169.254/latest/meta-data"):
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.responses.create(
                model=model,
                input=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_text", "text": "what is this?"},
                            {"type": "input_image", "image_url": url},
                        ],
                    }
                ],
            )
        assert refused.value.body["param"] == "input[0].content[1].image_url", url


def test_approve_never_sends_the_openai_api_key():
    import subprocess

    from starlette.responses import JSONResponse

    from tests.support.processes import CLI

    seen: list[str | None] = []

    async def anything(request: Request) -> JSONResponse:
        seen.append(request.headers.get("authorization"))
        return JSONResponse({"error": {"message": "no such response"}}, status_code=404)

    server = ThreadedServer(Starlette(routes=[Route("/{path:path}", anything, methods=["POST"])]), "api").start()
    try:
        env = {name: value for name, value in os.environ.items() if name != "DURABLE_RESPONSES_API_KEY"}
        for extra in ({"OPENAI_API_KEY": "sk-not-for-this-server"}, {"DURABLE_RESPONSES_API_KEY": "sk-dr-mine"}):
            subprocess.run(
                [CLI, "approve", "resp_x", "mcpr_y", "--api-url", f"http://127.0.0.1:{server.port}"],
                env=env | extra,
                capture_output=True,
                timeout=60,
            )
    finally:
        server.stop()
    assert seen == [None, "Bearer sk-dr-mine"], seen


async def test_health_names_a_failure_without_its_text():
    from api.health import ready

    async def store() -> None:
        raise OSError("could not connect to postgresql://admin:hunter2@db.internal:5432/responses")

    answer = await ready({"store": store}, answering="api")
    body = json.loads(answer.body)
    assert answer.status_code == 503 and body["store"] == "error: OSError"
    assert "hunter2" not in answer.body.decode() and "db.internal" not in answer.body.decode()


@pytest.mark.one_store
def test_metrics_can_need_a_key_or_have_a_port_of_their_own(stack: Stack):
    import httpx

    from tests.support.processes import free_port, spawn_api

    metrics_port = free_port()
    api, url = spawn_api(stack, env={"METRICS_AUTH": "Bearer scrape-me", "METRICS_PORT": str(metrics_port)})
    try:
        base = url.removesuffix("/v1")
        assert httpx.get(f"{base}/metrics", timeout=10).status_code == 404  # not on the API's port
        refused = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10)
        assert refused.status_code == 401
        scraped = httpx.get(
            f"http://127.0.0.1:{metrics_port}/metrics", timeout=10, headers={"authorization": "Bearer scrape-me"}
        )
        assert scraped.status_code == 200 and "durable_responses_" in scraped.text
    finally:
        kill(api)


async def test_a_long_reply_a_word_a_chunk_is_polled_coherently_and_completes(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
):
    """30,000 chunks of one word: the log keeps them as a few hundred deltas, each poll shows
    a prefix of the final text, and a stream of the stored log gives it whole."""
    text = "word " * 30_000
    backend.script(model, [Reply(text=text, chunk_chars=5)])
    created = await sdk.responses.create(model=model, input="go", background=True)
    seen: list[str] = []
    while (current := await sdk.responses.retrieve(created.id)).status in ("queued", "in_progress"):
        if current.output and current.output[0].type == "message" and current.output[0].content:
            seen.append(current.output[0].content[0].text)
        await asyncio.sleep(0.02)
    assert current.status == "completed" and current.output_text == text
    assert all(text.startswith(shown) for shown in seen)
    deltas = [
        event
        async for event in await sdk.responses.retrieve(created.id, stream=True)
        if event.type == "response.output_text.delta"
    ]
    assert "".join(event.delta for event in deltas) == text
    assert len(deltas) < 30_000


@pytest.mark.one_store
async def test_a_tool_list_that_never_ends_fails_the_listing_after_100_pages(
    sdk: openai.AsyncOpenAI,
    backend: ScriptedBackend,
    model: str,
):
    server = McpTestServer(endless_pages=True).start()
    try:
        began = time.monotonic()
        response = await sdk.responses.create(
            model=model,
            input="hi",
            tools=[{"type": "mcp", "server_label": "pages", "server_url": server.url, "require_approval": "never"}],
        )
        took = time.monotonic() - began
    finally:
        server.stop()
    assert response.status == "failed" and backend.requests(model) == []
    listing = response.output[0]
    assert listing.type == "mcp_list_tools" and "100 pages" in listing.error and "allowed_tools" in listing.error
    assert took < 30
