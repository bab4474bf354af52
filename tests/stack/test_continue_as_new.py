"""A response whose workflow history grows long continues as new between two turns and goes
on where it was: every tool call and inference once, its stream one unbroken sequence, its
end the same as a response that never continued. The workflow's result is the response's id
and status, not its output again."""

from __future__ import annotations

import json

import httpx
import pytest

from models.workflow_io import ResponseEnded
from tests.support.histories import keep_recording
from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import TEST_EXECUTION, EmptyStore, running_stack

TURNS = 6
SMALL_HISTORY = 12_000
"""Bytes: a history this big continues as new (one turn with its tool call is ~5-8 KB)."""


async def _runs(client, workflow_id: str) -> list:
    return [execution async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}'")]


@pytest.mark.parametrize("stream", [False, True], ids=["wait", "stream"])
async def test_a_long_history_continues_as_new_and_the_response_goes_on_where_it_was(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    model: str,
    mcp_server: McpTestServer,
    stream: bool,
):
    execution = TEST_EXECUTION.model_copy(update={"continue_as_new_bytes": SMALL_HISTORY})
    backend.script(
        model, [Reply(tool_calls=[("add", {"a": turn, "b": 1})]) for turn in range(TURNS)] + [Reply(text="all added")]
    )
    tool = {"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "never"}
    body = {"model": model, "input": "add, again and again", "tools": [tool], "stream": stream}
    async with running_stack(temporal_address, backend, store, execution=execution) as stack:
        async with stack.http() as http:
            if stream:
                events = []
                async with http.stream("POST", "/v1/responses", json=body, timeout=60) as answer:
                    async for line in answer.aiter_lines():
                        if line.startswith("data: "):
                            events.append(json.loads(line[6:]))
                numbers = [event["sequence_number"] for event in events]
                assert numbers == list(range(len(numbers))), "the stream is not one unbroken sequence"
                assert events[-1]["type"] == "response.completed"
                response_id = events[-1]["response"]["id"]
                added = [event["item"]["id"] for event in events if event["type"] == "response.output_item.added"]
                assert len(added) == len(set(added)) == TURNS + 2  # the listing, the calls, the message
            else:
                answer = await http.post("/v1/responses", json=body, timeout=60)
                assert answer.status_code == 200, answer.text
                response_id = answer.json()["id"]
            stored = (await http.get(f"/v1/responses/{response_id}")).json()
        runs = sorted(await _runs(stack.client, response_id), key=lambda run: run.start_time)
        ended = await stack.client.get_workflow_handle(response_id, result_type=ResponseEnded).result()
        if not stream and store.kind == "sqlite":
            await keep_recording("continued_as_new_first_run", stack.client, response_id, runs[0].run_id)
            await keep_recording("continued_as_new", stack.client, response_id, runs[-1].run_id)

    assert stored["status"] == "completed", stored.get("error")
    kinds = [item["type"] for item in stored["output"]]
    assert kinds == ["mcp_list_tools"] + ["mcp_call"] * TURNS + ["message"]
    assert [item["output"] for item in stored["output"][1:-1]] == [str(turn + 1) for turn in range(TURNS)]
    assert stored["output"][-1]["content"][0]["text"] == "all added"
    assert stored["usage"]["total_tokens"] > 0
    assert len(backend.requests(model)) == TURNS + 1, "an inference ran again after continuing as new"
    last = backend.requests(model)[-1]["messages"]
    assert [message["content"] for message in last if message["role"] == "tool"] == [
        str(turn + 1) for turn in range(TURNS)
    ], "the model lost tool results on the way"
    assert len(runs) >= 2, "the workflow never continued as new"
    assert ended == ResponseEnded(id=response_id, status="completed")


async def test_a_response_with_a_short_history_is_one_run(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    model: str,
):
    backend.script(model, [Reply(text="short")])
    async with running_stack(temporal_address, backend, store) as stack:
        async with httpx.AsyncClient(base_url=stack.base_url, timeout=30) as http:
            answer = await http.post("/responses", json={"model": model, "input": "hi"})
        response_id = answer.json()["id"]
        runs = await _runs(stack.client, response_id)
        ended = await stack.client.get_workflow_handle(response_id, result_type=ResponseEnded).result()
    assert len(runs) == 1 and ended.status == "completed"
