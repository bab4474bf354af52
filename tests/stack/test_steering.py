"""Steering over WebSocket mode, through the strict SDK: a steer sent while a response runs a
tool is accepted, the response stops after the tool's result as `incomplete`/`steered`, and
its successor, announced on the same lane, answers with the steer in its context; a steer
for a response that waits for the client's function output stays pending until the client's
next `response.create`, which starts with it; refusals say why."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai

from models.steering import MAX_PENDING_STEERS
from tests.stack.test_websocket_mode import TERMINAL, until_terminal
from tests.support.histories import keep_recording
from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack

STEER = "also mention the weather"


def mcp_tool(server: McpTestServer) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "tools", "server_url": server.url, "require_approval": "never"}


async def events_until(connection: Any, wanted: str) -> list[Any]:
    seen = []
    async for event in connection:
        seen.append(event)
        if event.type == wanted:
            return seen
    raise AssertionError(f"the connection closed before {wanted}")


async def test_a_steer_during_a_tool_call_stops_the_response_and_its_successor_answers(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(
        model,
        [Reply(tool_calls=[("slow", {"seconds": 1.5})]), Reply(text="slow is done, and it is sunny")],
    )
    async with sdk.responses.connect() as connection:
        await connection.response.create(
            model=model, input="run the slow tool", tools=[mcp_tool(mcp_server)], stream_id="main"
        )
        before = await events_until(connection, "response.mcp_call.in_progress")
        steered_id = before[0].response.id
        await connection.response.steer(previous_response_id=steered_id, input=STEER)
        events = await events_until(connection, "response.completed")
    kinds = [event.type for event in events]
    accepted = events[kinds.index("response.steer.accepted")]
    assert accepted.steer.previous_response_id == steered_id and accepted.stream_id == "main"
    stopped = events[kinds.index("response.incomplete")]
    assert stopped.response.id == steered_id and stopped.response.incomplete_details.reason == "steered"
    assert [item.type for item in stopped.response.output] == ["mcp_list_tools", "mcp_call"]
    assert stopped.response.output[1].output == "slept 1.5 s" or stopped.response.output[1].status == "completed"
    assert kinds.index("response.steer.accepted") < kinds.index("response.incomplete")
    created = events[kinds.index("response.created", kinds.index("response.incomplete"))]
    successor = events[-1].response
    assert created.response.id == successor.id != steered_id and created.stream_id == "main"
    assert successor.previous_response_id == steered_id and successor.output_text == "slow is done, and it is sunny"
    assert all(event.stream_id == "main" for event in events)
    context = backend.requests(model)[1]["messages"]
    assert context[-1] == {"role": "user", "content": STEER}
    assert any(message["role"] == "tool" for message in context), "the tool's result is in the successor's context"
    assert len(backend.requests(model)) == 2, "the steered response asked the model nothing more"
    # Found as a client that lost the connection would find it: by the response it follows.
    async with httpx.AsyncClient(base_url=stack.base_url, timeout=30) as http:
        listed = (await http.get("/responses", params={"previous_response_id": steered_id})).json()
    assert [response["id"] for response in listed["data"]] == [successor.id]
    items = await sdk.responses.input_items.list(successor.id)
    assert [item.content[0].text for item in items.data] == [STEER]
    await keep_recording("steered", stack.client, steered_id)
    await keep_recording("steered_successor", stack.client, successor.id)


async def test_a_steer_for_a_response_waiting_for_function_output_stays_pending(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str
):
    tool = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}
    backend.script(
        model,
        [Reply(tool_calls=[("lookup", {})], chunk_delay=0.3, chunk_chars=2), Reply(text="looked up, steered")],
    )
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="look it up", tools=[tool])
        created = await events_until(connection, "response.created")
        await connection.response.steer(
            previous_response_id=created[0].response.id,
            input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": STEER}]}],
        )
        events = await events_until(connection, "response.steer.pending")
        kinds = [event.type for event in events]
        assert "response.steer.accepted" in kinds and kinds.index("response.completed") < len(kinds) - 1
        pending = events[-1]
        call = events[kinds.index("response.completed")].response.output[0]
        assert pending.reason == "waiting_for_required_input"
        assert [stub.model_dump() for stub in pending.required_input] == [
            {"type": "function_call_output", "call_id": call.call_id, "name": "lookup"}
        ]
        await connection.response.create(
            model=model,
            previous_response_id=created[0].response.id,
            tools=[tool],
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "42"}],
        )
        answered = (await until_terminal(connection))[-1].response
    assert answered.output_text == "looked up, steered"
    await keep_recording("steer_pending", stack.client, created[0].response.id)
    messages = backend.requests(model)[1]["messages"]
    assert [m["role"] for m in messages[-2:]] == ["user", "tool"] and STEER in json.dumps(messages[-2])


async def test_steers_that_cannot_be_taken_fail_saying_why(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="done")])
    async with sdk.responses.connect() as connection:
        await connection.response.steer(previous_response_id="resp_unknown", input="hi")
        unknown = await events_until(connection, "response.steer.failed")
        assert unknown[-1].error.code == "response_not_found" and unknown[-1].steer.id is None
        await connection.response.create(model=model, input="quick")
        ended = (await until_terminal(connection))[-1].response
        await connection.response.steer(previous_response_id=ended.id, input="too late")
        late = await events_until(connection, "response.steer.failed")
        assert late[-1].error.code == "response_already_completed"
        await connection.send(
            {
                "type": "response.steer",
                "previous_response_id": ended.id,
                "input": [{"role": "assistant", "content": "x"}],
            }
        )
        invalid = await events_until(connection, "response.steer.failed")
        assert invalid[-1].error.code == "invalid_input"
        assert invalid[-1].steer.input == [{"role": "assistant", "content": "x"}] or invalid[-1].steer.input


async def test_a_steer_while_the_model_writes_is_applied_after_its_answer(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """Never between the deltas of a text: the answer completes, then a successor follows."""
    backend.script(model, [Reply(text="a long answer " * 5, chunk_delay=0.05, chunk_chars=4), Reply(text="and more")])
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="write")
        first = await events_until(connection, "response.output_text.delta")
        await connection.response.steer(previous_response_id=first[0].response.id, input="add more")
        events = await events_until(connection, "response.completed")
        rest = await events_until(connection, "response.completed")
    ended = events[-1].response
    assert ended.id == first[0].response.id and ended.output_text == "a long answer " * 5
    assert rest[-1].response.previous_response_id == ended.id and rest[-1].response.output_text == "and more"
    assert not any(event.type in TERMINAL for event in rest[:-1])


async def test_a_response_that_compacts_its_context_cannot_be_steered(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="compacting kind")])
    async with sdk.responses.connect() as connection:
        await connection.response.create(
            model=model, input="hi", context_management=[{"type": "compaction", "compact_threshold": 100_000}]
        )
        created = await events_until(connection, "response.created")
        await connection.response.steer(previous_response_id=created[0].response.id, input="steer me")
        # The response may end before its steer is refused (its first call writes the end):
        # both are waited for, in either order.
        refused, ended = [], False
        async for event in connection:
            refused += [event] if event.type == "response.steer.failed" else []
            ended = ended or event.type in TERMINAL
            if refused and ended:
                break
    assert refused and ended
    assert refused[-1].error.code == "steering_not_supported"
    assert refused[-1].steer.previous_response_id == created[0].response.id


async def test_a_steer_for_a_response_of_another_connection_is_not_found(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="mine")])
    async with sdk.responses.connect() as mine:
        await mine.response.create(model=model, input="hi")
        ended = (await until_terminal(mine))[-1].response
    async with sdk.responses.connect() as other:
        await other.response.steer(previous_response_id=ended.id, input="not yours")
        refused = await events_until(other, "response.steer.failed")
    assert refused[-1].error.code == "response_not_found" and refused[-1].steer.id is None


async def test_a_response_holds_at_most_sixteen_steers(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    # The call outlasts the steers' answers on a loaded CI machine too (each is a store write and
    # a signal): a loaded run with a 2 s call accepted 15 of them, not 16.
    backend.script(model, [Reply(tool_calls=[("slow", {"seconds": 6})]), Reply(text="took them all")])
    async with sdk.responses.connect() as connection:
        await connection.response.create(model=model, input="go", tools=[mcp_tool(mcp_server)])
        before = await events_until(connection, "response.mcp_call.in_progress")
        target = before[0].response.id
        for index in range(MAX_PENDING_STEERS + 1):
            await connection.response.steer(previous_response_id=target, input=f"steer {index}")
        answers = []
        async for event in connection:
            if event.type.startswith("response.steer."):
                answers.append(event)
            if len(answers) == MAX_PENDING_STEERS + 1:
                break
        successor = (await events_until(connection, "response.completed"))[-1].response
    kinds = [answer.type for answer in answers]
    assert kinds.count("response.steer.accepted") == MAX_PENDING_STEERS
    refused = [answer for answer in answers if answer.type == "response.steer.failed"]
    assert [answer.error.code for answer in refused] == ["too_many_pending_steers"]
    assert successor.previous_response_id == target and successor.output_text == "took them all"
    items = await sdk.responses.input_items.list(successor.id, order="asc", limit=100)
    assert [item.content[0].text for item in items.data] == [f"steer {index}" for index in range(MAX_PENDING_STEERS)]
