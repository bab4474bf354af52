"""Steering through a crash: input accepted just before kill -9 of the API and the worker is
applied after the restart, once, and its successor, whose connection is gone, is found by the
response it follows (`GET /v1/responses?previous_response_id=`) and read from the event log."""

from __future__ import annotations

import json

import httpx
import openai

from tests.support.mcp_servers import McpTestServer
from tests.support.processes import kill, spawn_api, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack
from tests.support.waiting import eventually

STEER = "and say the word durable"


async def test_a_steer_accepted_before_every_process_is_killed_is_applied_once(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    server = McpTestServer().start()
    backend.script(model, [Reply(tool_calls=[("slow", {"seconds": 3})]), Reply(text="durable, as asked")])
    tool = {"type": "mcp", "server_label": "tools", "server_url": server.url, "require_approval": "never"}
    processes: list = []
    try:
        async with running_stack(temporal_address, backend, store, with_worker=False, task_timeout_seconds=2) as stack:
            worker = spawn_worker(stack)
            api, url = spawn_api(stack)
            processes += [worker, api]
            client = openai.AsyncOpenAI(base_url=url, api_key="test", _strict_response_validation=True)
            async with client.responses.connect() as connection:
                await connection.response.create(model=model, input="run slow", tools=[tool], stream_id="lane")
                steered_id = None
                async for event in connection:
                    if event.type == "response.created":
                        steered_id = event.response.id
                    if event.type == "response.mcp_call.in_progress":
                        await connection.response.steer(previous_response_id=steered_id, input=STEER)
                    if event.type == "response.steer.accepted":
                        kill(worker)
                        kill(api)
                        break
            processes += [spawn_worker(stack)]
            api, url = spawn_api(stack)
            processes.append(api)
            async with httpx.AsyncClient(base_url=url, timeout=30) as http:

                async def successors() -> list[dict]:
                    page = await http.get("/responses", params={"previous_response_id": steered_id})
                    return page.json()["data"]

                found = await eventually(successors, "the successor to be kept", seconds=90)
                successor_id = found[0]["id"]
                async with http.stream("GET", f"/responses/{successor_id}", params={"stream": "true"}) as stream:
                    events = [
                        json.loads(line.removeprefix("data: "))
                        async for line in stream.aiter_lines()
                        if line.startswith("data: ")
                    ]
                steered = (await http.get(f"/responses/{steered_id}")).json()
                assert [item["id"] for item in await successors()] == [successor_id], "made once"
    finally:
        for process in processes:
            kill(process)
        server.stop()
    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "durable, as asked"
    assert steered["status"] == "incomplete" and steered["incomplete_details"] == {"reason": "steered"}
    asked = backend.requests(model)
    assert len(asked) == 2 and asked[1]["messages"][-1] == {"role": "user", "content": STEER}
