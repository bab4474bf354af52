"""What Codex sends, over raw HTTP and through the strict SDK: `namespace`, `custom`,
`web_search` and `tool_search` tools, `client_metadata`, `include`, `reasoning`, `text`,
`prompt_cache_key` and `store: false` with the whole history sent back each turn, reasoning
sealed in `encrypted_content` included. (The real Codex CLI runs in `test_codex_cli.py`.)"""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.support.openresponses import validate_response
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack

PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"

TOOLS = [
    {
        "type": "function",
        "name": "exec_command",
        "description": "Run a shell command.",
        "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    },
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "Edit files; the input is a patch, not JSON.",
        "format": {"type": "grammar", "syntax": "lark", "definition": 'start: "*** Begin Patch" LF'},
    },
    {
        "type": "namespace",
        "name": "multi_agent_v1",
        "description": "Sub-agents.",
        "tools": [
            {
                "type": "function",
                "name": "spawn_agent",
                "description": "Start a sub-agent.",
                "strict": False,
                "parameters": {"type": "object", "properties": {"task": {"type": "string"}}},
            },
            {"type": "function", "name": "close_agent", "strict": False, "parameters": {"type": "object"}},
        ],
    },
    {
        "type": "tool_search",
        "execution": "client",
        "description": "Find deferred tools.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
    {"type": "web_search", "external_web_access": False, "search_content_types": ["text", "image"]},
]


def codex_request(model: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": model,
        "stream": True,
        "store": False,
        "input": items,
        "tools": TOOLS,
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "session-1",
        "text": {"verbosity": "low"},
        "client_metadata": {"session_id": "session-1", "x-codex-turn-metadata": "{}"},
    }


async def events_of(http: httpx.AsyncClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    async with http.stream("POST", "/v1/responses", json=body) as answer:
        assert answer.status_code == 200, await answer.aread()
        return [json.loads(line[5:]) async for line in answer.aiter_lines() if line.startswith("data:")]


async def test_codex_request_is_accepted_and_the_model_sees_its_tools_as_functions(
    stack: Stack, backend: ScriptedBackend, model: str
):
    async with stack.http() as http:
        events = await events_of(
            http,
            codex_request(
                model,
                [
                    {
                        "type": "message",
                        "role": "developer",
                        "content": [{"type": "input_text", "text": "Be careful."}],
                    },
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "say hi"}]},
                ],
            ),
        )
    final = events[-1]
    assert final["type"] == "response.completed", final
    validate_response(final["response"])
    assert final["response"]["store"] is False and final["response"]["prompt_cache_key"] == "session-1"
    sent = backend.requests(model)[-1]
    functions = sorted(tool["function"]["name"] for tool in sent["tools"])
    assert functions == ["apply_patch", "exec_command", "multi_agent_v1__close_agent", "multi_agent_v1__spawn_agent"]
    assert sent["reasoning_effort"] == "medium" and sent["messages"][0] == {"role": "system", "content": "Be careful."}


async def test_a_custom_tool_call_streams_and_round_trips_statelessly(
    stack: Stack, backend: ScriptedBackend, model: str
):
    backend.script(
        model,
        [
            Reply(tool_calls=[("apply_patch", {"input": PATCH})], reasoning="A file is needed."),
            Reply(text="Done."),
        ],
    )
    history = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "add hello.txt"}]}]
    async with stack.http() as http:
        events = await events_of(http, codex_request(model, history))
        types = [event["type"] for event in events]
        for expected in ("response.custom_tool_call_input.delta", "response.custom_tool_call_input.done"):
            assert expected in types
        added = next(
            event["item"]
            for event in events
            if event["type"] == "response.output_item.added" and event["item"]["type"] == "custom_tool_call"
        )
        assert added["input"] == ""
        output = events[-1]["response"]["output"]
        reasoning, call = output
        assert (call["type"], call["name"], call["input"]) == ("custom_tool_call", "apply_patch", PATCH)
        assert reasoning["encrypted_content"] and "A file is needed" not in reasoning["encrypted_content"]

        # Codex keeps no state on the server: the next turn sends everything back.
        history += [
            reasoning,
            call,
            {
                "type": "custom_tool_call_output",
                "call_id": call["call_id"],
                "output": "Success. Updated the following files:\nA hello.txt",
            },
        ]
        events = await events_of(http, codex_request(model, history))
    assert events[-1]["response"]["output"][0]["content"][0]["text"] == "Done."
    messages = backend.requests(model)[-1]["messages"]
    assistant = messages[1]
    assert assistant["tool_calls"][0]["function"] == {"name": "apply_patch", "arguments": json.dumps({"input": PATCH})}
    assert "reasoning_content" not in assistant, "reasoning goes back upstream only when configured"
    assert messages[2]["role"] == "tool" and messages[2]["content"].startswith("Success.")


async def test_namespaced_calls_carry_their_namespace(stack: Stack, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(tool_calls=[("multi_agent_v1__spawn_agent", {"task": "look"})])])
    async with stack.http() as http:
        answer = await http.post(
            "/v1/responses",
            json=codex_request(model, [{"type": "message", "role": "user", "content": "spawn one"}])
            | {"stream": False},
        )
    call = answer.json()["output"][0]
    assert (call["type"], call["name"], call["namespace"]) == ("function_call", "spawn_agent", "multi_agent_v1")
    async with stack.sdk() as sdk:
        follow_up = await sdk.responses.create(
            model=model,
            input=[
                {"type": "message", "role": "user", "content": "spawn one"},
                {
                    "type": "function_call",
                    "call_id": call["call_id"],
                    "name": "spawn_agent",
                    "namespace": "multi_agent_v1",
                    "arguments": call["arguments"],
                },
                {"type": "function_call_output", "call_id": call["call_id"], "output": "agent-7"},
            ],
            tools=TOOLS,
        )
    assert follow_up.status == "completed"
    sent = backend.requests(model)[-1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "multi_agent_v1__spawn_agent"


async def test_sealed_reasoning_goes_back_upstream_when_the_backend_takes_it(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    backend.script(model, [Reply(text="4", reasoning="two plus two"), Reply(text="8")])
    async with running_stack(temporal_address, backend, store, send_reasoning=True) as stack, stack.http() as http:
        first = (
            await http.post(
                "/v1/responses",
                json={"model": model, "input": "2+2?", "store": False, "include": ["reasoning.encrypted_content"]},
            )
        ).json()
        reasoning = first["output"][0]
        assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
        stateless = {key: value for key, value in reasoning.items() if key != "content"}
        second = await http.post(
            "/v1/responses",
            json={
                "model": model,
                "store": False,
                "input": [
                    {"role": "user", "content": "2+2?"},
                    stateless,
                    first["output"][1],
                    {"role": "user", "content": "x2?"},
                ],
            },
        )
    assert second.status_code == 200, second.text
    assistant = backend.requests(model)[-1]["messages"][1]
    assert assistant == {"role": "assistant", "content": "4", "reasoning_content": "two plus two"}


async def test_the_sdk_stream_helper_assembles_reasoning_and_custom_calls(
    stack: Stack, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(tool_calls=[("apply_patch", {"input": PATCH})], reasoning="Needs a file.")])
    async with stack.sdk() as sdk:
        async with sdk.responses.stream(model=model, input="add hello.txt", tools=TOOLS[:2]) as stream:
            final = await stream.get_final_response()
    assert [item.type for item in final.output] == ["reasoning", "custom_tool_call"]
    assert final.output[1].input == PATCH and final.output[0].content[0].text == "Needs a file."
