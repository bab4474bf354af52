"""WebSocket mode through the official SDK's `client.responses.connect()`, strictly validated:
responses in sequence on one connection, a function call answered by the next
`response.create`, lanes in parallel, a `store: false` chain the connection holds, `generate:
false`, refused messages answered with `error` events on a connection that stays open, and
the door (keys, other paths, the mode turned off)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from typing import Any

import httpx
import openai
import pytest
import websockets

from access.quotas import QuotaSettings
from telemetry import metrics
from tests.support.keys import make_key
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack, running_stack
from tests.support.waiting import until_terminal as until_stored_end
from websocket_mode.settings import WebSocketSettings

TERMINAL = {"response.completed", "response.failed", "response.incomplete", "response.cancelled"}


async def until_terminal(connection: Any, *, stream_id: str | None = None) -> list[Any]:
    """The events of one response (of one lane, when `stream_id`), through its terminal one."""
    seen = []
    async for event in connection:
        if stream_id is not None and getattr(event, "stream_id", None) != stream_id:
            continue
        seen.append(event)
        if event.type in TERMINAL or event.type == "error":
            return seen
    raise AssertionError("the connection closed before the response ended")


def user_texts(backend: ScriptedBackend, model: str, request: int) -> list[str]:
    return [m["content"] for m in backend.requests(model)[request]["messages"] if m["role"] == "user"]


async def test_two_responses_in_sequence_continue_one_another(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="first answer"), Reply(text="second answer")])
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="first question")
        first = await until_terminal(connection)
        assert [event.type for event in first][:2] == ["response.created", "response.in_progress"]
        assert first[-1].type == "response.completed" and first[-1].response.output_text == "first answer"
        deltas = "".join(event.delta for event in first if event.type == "response.output_text.delta")
        assert deltas == "first answer"
        assert all(getattr(event, "stream_id", None) is None for event in first)
        await connection.response.create(
            model=model, input="second question", previous_response_id=first[-1].response.id
        )
        second = await until_terminal(connection)
    assert second[-1].response.output_text == "second answer"
    assert second[-1].response.previous_response_id == first[-1].response.id
    assert "first question" in json.dumps(backend.requests(model)[1]["messages"])
    stored = await sdk.responses.retrieve(second[-1].response.id)
    assert stored.status == "completed" and stored.output_text == "second answer"


async def test_a_function_call_is_answered_by_the_next_create(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(tool_calls=[("lookup", {"q": "x"})]), Reply(text="found it")])
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="look it up", tools=[tool])
        called = (await until_terminal(connection))[-1].response
        call = called.output[0]
        assert call.type == "function_call" and call.name == "lookup"
        await connection.response.create(
            model=model,
            previous_response_id=called.id,
            tools=[tool],
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "42"}],
        )
        answered = (await until_terminal(connection))[-1].response
    assert answered.output_text == "found it"
    assert [m["content"] for m in backend.requests(model)[1]["messages"] if m["role"] == "tool"] == ["42"]


async def test_lanes_run_side_by_side_and_say_which_they_are(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, stack: Stack
):
    """Two `stream_id`s: both responses stream at once (their events interleave), every event
    names its lane, and each lane keeps its own order."""
    slow = {"chunk_delay": 0.05, "chunk_chars": 2}
    backend.script(f"{model}-a", [Reply(text="alpha " * 10, **slow)])
    backend.script(f"{model}-b", [Reply(text="bravo " * 10, **slow)])
    events: list[Any] = []
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=f"{model}-a", input="a", stream_id="a")
        await connection.response.create(model=f"{model}-b", input="b", stream_id="b")
        ended: set[str] = set()
        async for event in connection:
            events.append(event)
            if event.type in TERMINAL:
                ended.add(event.stream_id)
            if ended == {"a", "b"}:
                break
    lanes = [event.stream_id for event in events]
    assert set(lanes) == {"a", "b"}
    first_end = min(index for index, event in enumerate(events) if event.type in TERMINAL)
    assert {"a", "b"} <= set(lanes[:first_end]), "one lane waited for the other"
    for lane, text in (("a", "alpha " * 10), ("b", "bravo " * 10)):
        mine = [event for event in events if event.stream_id == lane]
        numbers = [event.sequence_number for event in mine]
        assert numbers == sorted(numbers) and mine[-1].response.output_text == text


async def test_a_lane_runs_its_creates_one_after_another(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(text="one", delay=0.3), Reply(text="two")])
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="1")
        await connection.response.create(model=model, input="2")
        first = await until_terminal(connection)
        second = await until_terminal(connection)
    assert first[-1].response.output_text == "one" and second[-1].response.output_text == "two"
    assert second[0].response.created_at >= first[-1].response.created_at


async def test_an_unstored_chain_lives_on_its_connection_only(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="remember 7"), Reply(text="it was 7")])
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="the number is 7", store=False)
        first = (await until_terminal(connection))[-1].response
        await connection.response.create(model=model, input="what was it?", store=False, previous_response_id=first.id)
        second = (await until_terminal(connection))[-1].response
        assert second.output_text == "it was 7"
        assert "the number is 7" in json.dumps(backend.requests(model)[1]["messages"])
        with pytest.raises(openai.NotFoundError):
            await sdk.responses.retrieve(first.id)  # never stored
        async with sdk.responses.connect() as elsewhere:
            await elsewhere.response.create(model=model, input="and?", previous_response_id=first.id)
            refused = await until_terminal(elsewhere)
    assert refused[-1].type == "error" and refused[-1].error.code == "previous_response_not_found"
    assert refused[-1].status == 404


async def test_generate_false_keeps_the_input_as_context_and_asks_nothing(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="warm answer")])
    async with sdk.responses.connect() as connection:
        await connection.send({"type": "response.create", "model": model, "input": "context only", "generate": False})
        warmed = (await until_terminal(connection))[-1].response
        assert warmed.status == "completed" and warmed.output == [] and backend.requests(model) == []
        await connection.response.create(model=model, input="now answer", previous_response_id=warmed.id)
        answered = (await until_terminal(connection))[-1].response
    assert answered.output_text == "warm answer"
    assert user_texts(backend, model, 0) == ["context only", "now answer"]


@pytest.mark.parametrize(
    ("event", "param", "code"),
    [
        ({"type": "response.create", "input": "no model"}, "model", "missing_required_parameter"),
        ({"type": "response.create", "model": "m", "input": 5}, "input", "invalid_value"),
        ({"type": "response.create", "model": "m", "input": "x", "background": True}, "background", None),
        ({"type": "response.create", "model": "m", "input": "x", "stream_id": 7}, "stream_id", "invalid_value"),
        ({"type": "response.create", "model": "m", "input": "x", "bogus": 1}, "bogus", "unknown_parameter"),
        ({"type": "response.dance"}, "type", "invalid_value"),
        ({"model": "m"}, "type", "missing_required_parameter"),
        ({"type": "response.steer", "input": "x"}, "previous_response_id", "missing_required_parameter"),
    ],
)
async def test_a_bad_message_gets_an_error_event_and_the_connection_stays_open(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, event: dict, param: str, code: str | None
):
    backend.script(model, [Reply(text="still here")])
    async with sdk.responses.connect() as connection:
        await connection.send(event)
        refused = await until_terminal(connection)
        assert refused[-1].type == "error" and refused[-1].status == 400
        assert refused[-1].error.param == param and refused[-1].error.type == "invalid_request_error"
        if code is not None:
            assert refused[-1].error.code == code
        await connection.response.create(model=model, input="and now?")
        assert (await until_terminal(connection))[-1].response.output_text == "still here"


async def test_not_json_gets_an_error_event(stack: Stack, backend: ScriptedBackend, model: str):
    async with websockets.connect(stack.base_url.replace("http", "ws") + "/responses") as socket:
        await socket.send("{not json")
        refused = json.loads(await socket.recv())
        assert refused["type"] == "error" and refused["status"] == 400
        assert refused["error"]["code"] == "invalid_json"


async def test_a_response_over_websocket_is_cancelled_over_http(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="never " * 200, chunk_delay=0.05, chunk_chars=3)])
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="long")
        created = None
        async for event in connection:
            if event.type == "response.created":
                created = event.response.id
            if event.type == "response.output_text.delta":
                cancelled = await sdk.responses.cancel(created)
                break
        rest = await until_terminal(connection)
    assert cancelled.status == "cancelled" and rest[-1].type == "response.failed"  # as over SSE
    assert rest[-1].response.status == "cancelled"


async def test_other_paths_and_a_mode_turned_off_say_why(stack: Stack, temporal_address: str, backend: ScriptedBackend):
    base = stack.base_url.replace("http", "ws").removesuffix("/v1")
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(f"{base}/v1/chat"):
            pass
    assert refused.value.response.status_code == 404
    assert b"/v1/responses" in refused.value.response.body
    off = dataclasses.replace(stack.store, url=stack.store.url)
    async with running_stack(temporal_address, backend, off, websocket=WebSocketSettings(enabled=False)) as closed:
        with pytest.raises(websockets.InvalidStatus) as turned_off:
            async with websockets.connect(closed.base_url.replace("http", "ws") + "/responses"):
                pass
    assert turned_off.value.response.status_code == 403
    assert b"WEBSOCKET_MODE" in turned_off.value.response.body


async def test_a_connection_without_a_key_is_refused_once_keys_exist(
    temporal_address: str, backend: ScriptedBackend, sqlite_store, model: str
):
    backend.script(model, [Reply(text="keyed")])
    async with running_stack(temporal_address, backend, sqlite_store) as own:
        key, _ = make_key(own, "alpha")
        url = own.base_url.replace("http", "ws") + "/responses"
        for headers in ({}, {"Authorization": "Bearer sk-wrong"}):
            with pytest.raises(websockets.InvalidStatus) as refused:
                async with websockets.connect(url, additional_headers=headers):
                    pass
            assert refused.value.response.status_code == 401
            assert json.loads(refused.value.response.body)["error"]["type"] == "invalid_request_error"
        keyed = openai.AsyncOpenAI(base_url=own.base_url, api_key=key, _strict_response_validation=True)
        async with keyed.responses.connect() as connection:
            await connection.response.create(model=model, input="hi")
            answered = (await until_terminal(connection))[-1].response
        assert answered.output_text == "keyed"
        async with httpx.AsyncClient() as http:
            log = await http.get(own.base_url + "/responses", headers={"Authorization": f"Bearer {key}"})
        assert answered.id in log.text


async def test_a_connection_that_sends_too_fast_or_too_much_is_closed_with_a_reason(
    temporal_address: str, backend: ScriptedBackend, sqlite_store
):
    limits = WebSocketSettings(messages_per_second=5, message_burst=5, idle_seconds=0.5)
    async with running_stack(temporal_address, backend, sqlite_store, websocket=limits) as own:
        url = own.base_url.replace("http", "ws") + "/responses"
        async with websockets.connect(url) as socket:
            for _ in range(10):
                await socket.send('{"type": "response.dance"}')
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await socket.recv()
        assert closed.value.rcvd.code == 1008 and "WEBSOCKET_MESSAGES_PER_SECOND" in closed.value.rcvd.reason
        async with websockets.connect(url) as socket:
            with pytest.raises(websockets.ConnectionClosed) as idle:
                await asyncio.wait_for(socket.recv(), 10)
        assert idle.value.rcvd.code == 1000 and "WEBSOCKET_IDLE_SECONDS" in idle.value.rcvd.reason
        async with websockets.connect(url, max_size=None) as socket:
            await socket.send("x" * (17 * 1024 * 1024))
            with pytest.raises(websockets.ConnectionClosed) as big:
                await asyncio.wait_for(socket.recv(), 10)
        assert big.value.rcvd.code in (1009, 1008)


async def test_a_dropped_connection_leaves_its_response_running_and_resumable(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str
):
    """The client goes away mid-answer: the response carries on, and its events are read
    again from the log where the client left off."""
    text = "keeps going " * 20
    backend.script(model, [Reply(text=text, chunk_delay=0.02, chunk_chars=4)])
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="long")
        seen = []
        async for event in connection:
            seen.append(event)
            if event.type == "response.output_text.delta":
                break
    response_id, last = seen[0].response.id, seen[-1].sequence_number
    ended = await until_stored_end(sdk, response_id)
    assert ended.status == "completed" and ended.output_text == text
    rest = [event async for event in await sdk.responses.retrieve(response_id, stream=True, starting_after=last)]
    deltas = [event.delta for event in seen + rest if event.type == "response.output_text.delta"]
    assert "".join(deltas) == text and rest[-1].type == "response.completed"


async def test_the_keys_limits_apply_to_each_create(
    temporal_address: str, backend: ScriptedBackend, sqlite_store, model: str
):
    """A key's streams (`MAX_STREAMS_PER_KEY`) count a connection's running responses: past the
    limit a create is refused with a 429 `error` event on its lane, and the connection goes on."""
    backend.script(model, [Reply(text="slow " * 30, chunk_delay=0.02, chunk_chars=5), Reply(text="after")])
    async with running_stack(
        temporal_address, backend, sqlite_store, quotas=QuotaSettings(max_streams_per_key=1)
    ) as own:
        async with own.sdk().responses.connect() as connection:
            await connection.response.create(model=model, input="one", stream_id="a")
            await until_event(connection, "response.output_text.delta")
            await connection.response.create(model=model, input="two", stream_id="b")
            refused = await until_terminal(connection, stream_id="b")
            assert refused[-1].type == "error" and refused[-1].status == 429
            await until_terminal(connection, stream_id="a")
            await connection.response.create(model=model, input="three", stream_id="b")
            assert (await until_terminal(connection, stream_id="b"))[-1].response.output_text == "after"


async def until_event(connection: Any, wanted: str) -> Any:
    async for event in connection:
        if event.type == wanted:
            return event
    raise AssertionError(f"the connection closed before {wanted}")


async def test_refused_and_accepted_upgrades_are_logged_and_counted(stack: Stack, caplog: pytest.LogCaptureFixture):
    def counted(status: str) -> float:
        labels = {"method": "WEBSOCKET", "route": "/v1/responses", "status": status}
        return metrics.REGISTRY.get_sample_value("durable_responses_http_requests_total", labels) or 0.0

    # The count is the process's: a connection of an earlier test on the shared stack may still
    # be ending (it is counted as it ends), so this one's count starts once that has settled.
    before = counted("101")
    for _ in range(50):
        await asyncio.sleep(0.3)
        if counted("101") == before:
            break
        before = counted("101")
    caplog.set_level(logging.INFO, logger="durable_responses.access")
    async with websockets.connect(stack.base_url.replace("http", "ws") + "/responses") as socket:
        await socket.send('{"type": "response.dance"}')
        await socket.recv()
    await asyncio.sleep(0.2)
    assert counted("101") == before + 1
    assert any(record.getMessage().startswith("WEBSOCKET /v1/responses 101") for record in caplog.records)


async def test_creates_waiting_for_their_lanes_are_bounded(
    temporal_address: str, backend: ScriptedBackend, sqlite_store, model: str
):
    backend.script(model, [Reply(text="first", delay=1.0), Reply(text="second"), Reply(text="third")])
    async with running_stack(
        temporal_address, backend, sqlite_store, websocket=WebSocketSettings(max_waiting_creates=2)
    ) as own:
        async with own.sdk().responses.connect() as connection:
            await connection.response.create(model=model, input="1")
            await until_event(connection, "response.created")  # running: no longer waiting
            for index in (2, 3, 4):
                await connection.response.create(model=model, input=str(index))
            refused = await until_event(connection, "error")
            assert refused.status == 429 and "waiting for their lanes" in refused.error.message
            answers = [(await until_terminal(connection))[-1].response.output_text for _ in range(3)]
    assert answers == ["first", "second", "third"]


# ---- issue 60: keys checked on every message, sockets counted, nothing of another project read --


async def test_a_revoked_keys_open_connection_is_closed_within_seconds(
    temporal_address: str, backend: ScriptedBackend, sqlite_store, model: str
):
    """M5: HTTP refuses a revoked key within seconds; an open socket of it did not, for up to an
    hour. Now it is closed (1008) within seconds, idle or not, and takes no `response.create`."""
    import subprocess

    from tests.support.processes import CLI

    backend.script(model, [Reply(text="before"), Reply(text="after")])
    async with running_stack(temporal_address, backend, sqlite_store) as own:
        key, key_id = make_key(own, "alpha")
        url = own.base_url.replace("http", "ws") + "/responses"
        async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as socket:
            await socket.send(json.dumps({"type": "response.create", "model": model, "input": "one"}))
            while json.loads(await socket.recv())["type"] not in TERMINAL:
                pass
            revoked = subprocess.run(
                [CLI, "keys", "revoke", key_id, "--database-url", own.settings.database_url],
                capture_output=True,
                text=True,
                check=False,
            )
            assert revoked.returncode == 0, revoked.stderr
            with pytest.raises(websockets.ConnectionClosed) as closed:
                async with asyncio.timeout(10):
                    while True:
                        said = json.loads(await socket.recv())
                        assert said["type"] not in TERMINAL, "a revoked key's response.create was answered"
                        await socket.send(json.dumps({"type": "response.create", "model": model, "input": "two"}))
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008, closed.value
        assert "revoked" in closed.value.rcvd.reason
    assert len(backend.requests(model)) == 1


async def test_a_keys_sockets_are_counted_and_take_nothing_from_its_creates(
    temporal_address: str, backend: ScriptedBackend, sqlite_store, model: str
):
    """L3: 12 sockets were open at once for a key allowed 6 requests. Sockets are counted on their
    own, against the key's streams bound; a socket takes no request slot from its own creates
    (a key allowed one request open still answers a create on its one socket)."""
    backend.script(model, [Reply(text="through the one slot")])
    async with running_stack(
        temporal_address,
        backend,
        sqlite_store,
        quotas=QuotaSettings(max_streams_per_key=3, max_in_flight_per_key=1),
    ) as own:
        url = own.base_url.replace("http", "ws") + "/responses"
        sockets = [await websockets.connect(url) for _ in range(3)]
        try:
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(url)
            assert refused.value.response.status_code == 429
            assert "MAX_STREAMS_PER_KEY" in json.loads(refused.value.response.body)["error"]["message"]
            await sockets[0].send(json.dumps({"type": "response.create", "model": model, "input": "hi"}))
            while (said := json.loads(await sockets[0].recv()))["type"] not in TERMINAL:
                assert said["type"] != "error", said
            assert said["response"]["output"][0]["content"][0]["text"] == "through the one slot"
            await sockets.pop().close()
            for _ in range(50):  # the closed one's place is given back as its connection ends
                try:
                    sockets.append(await websockets.connect(url))
                    break
                except websockets.InvalidStatus:
                    await asyncio.sleep(0.05)
            assert len(sockets) == 3
        finally:
            for socket in sockets:
                await socket.close()


async def test_another_projects_pending_steers_are_never_read(
    temporal_address: str, backend: ScriptedBackend, sqlite_store, model: str
):
    """L4: a `response.create` naming another project's response was refused naming `input[2]`
    where it named `input[1]` for any other id: the count of that response's pending steers
    showed. Now it is refused as an unknown response is, whatever that response holds."""
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    backend.script(model, [Reply(tool_calls=[("lookup", {})], chunk_delay=0.3, chunk_chars=2)])
    async with running_stack(temporal_address, backend, sqlite_store) as own:
        alpha, _ = make_key(own, "alpha")
        beta, _ = make_key(own, "beta")
        client = openai.AsyncOpenAI(base_url=own.base_url, api_key=alpha, _strict_response_validation=True)
        async with client.responses.connect() as connection:
            await connection.response.create(model=model, input="look it up", tools=[tool])
            created = None
            async for event in connection:
                if event.type == "response.created":
                    created = event.response.id
                    await connection.response.steer(previous_response_id=created, input="steer one")
                if event.type == "response.steer.pending":
                    break
        bad = [{"type": "message", "role": "user", "content": "fine"}, {"type": "message", "role": "nobody"}]
        url = own.base_url.replace("http", "ws") + "/responses"
        said = {}
        for previous in (created, "resp_" + "0" * 48):
            async with websockets.connect(url, additional_headers={"Authorization": f"Bearer {beta}"}) as socket:
                await socket.send(
                    json.dumps(
                        {"type": "response.create", "model": model, "previous_response_id": previous, "input": bad}
                    )
                )
                said[previous] = json.loads(await socket.recv())["error"]
        assert said[created] == said["resp_" + "0" * 48], said
