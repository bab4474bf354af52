"""Overload: past its in-flight limit an API process sheds new responses at the door, with a
503 in OpenAI's shape and `retry-after`, leaving nothing behind; a stream holds its place
until it ends."""

from __future__ import annotations

import asyncio

from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack
from tests.support.waiting import until_requested


async def test_past_the_limit_a_response_is_shed_and_leaves_nothing(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    backend.script(model, [Reply(text="slow", delay=1.0)])
    async with running_stack(temporal_address, backend, store, max_in_flight=1) as stack:
        async with stack.sdk() as sdk, stack.http() as http:
            slow = asyncio.create_task(sdk.responses.create(model=model, input="first"))
            await until_requested(backend, model)
            shed = await http.post("/v1/responses", json={"model": model, "input": "second"})
            assert shed.status_code == 503 and shed.headers["retry-after"] == "1"
            assert shed.json()["error"]["type"] == "server_error"
            assert shed.json()["error"]["code"] == "server_overloaded"
            assert (await slow).output_text == "slow"
            after = await sdk.responses.create(model=model, input="third")
            assert after.output_text == "echo: third", "the place of a finished response is free again"
            stored = [response["id"] for response in (await http.get("/v1/responses")).json()["data"]]
    assert stored == [after.id, (await slow).id], "a shed request leaves no response behind"
    assert len(backend.requests(model)) == 2


async def test_a_stream_holds_its_place_until_it_ends(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    backend.script(model, [Reply(text="one two three four five six", chunk_delay=0.2)])
    async with running_stack(temporal_address, backend, store, max_in_flight=1) as stack:
        async with stack.sdk() as sdk, stack.http() as http:
            async with sdk.responses.stream(model=model, input="stream") as stream:
                async for event in stream:
                    if event.type == "response.output_text.delta":
                        break
                shed = await http.post("/v1/responses", json={"model": model, "input": "meanwhile"})
                assert shed.status_code == 503
                final = await stream.get_final_response()
            assert final.output_text == "one two three four five six"
            assert (await sdk.responses.create(model=model, input="later")).output_text == "echo: later"
