"""The client's typed tools through the official SDK with strict validation: a `shell` in a
`local` environment (or none), `local_shell` and `apply_patch` are offered to the model as
functions; its calls end the response as their own items (`shell_call`, `local_shell_call`,
`apply_patch_call`), streamed whole; the client's outputs come back as input items and the
model is shown them as the calls' results."""

from __future__ import annotations

import openai
import pytest

from tests.support.scripted_backend import Reply, ScriptedBackend

TOOLS = [{"type": "shell", "environment": {"type": "local"}}, {"type": "local_shell"}, {"type": "apply_patch"}]


def tool_messages(backend: ScriptedBackend, model: str, request: int) -> list[str]:
    return [m["content"] for m in backend.requests(model)[request]["messages"] if m["role"] == "tool"]


@pytest.mark.parametrize("stream", [False, True], ids=["created", "streamed"])
async def test_the_client_runs_the_calls_and_sends_their_outputs_back(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, stream: bool
):
    backend.script(
        model,
        [
            Reply(
                tool_calls=[
                    ("shell", {"commands": ["ls -la"], "timeout_ms": 5000}),
                    ("local_shell", {"command": ["git", "status"], "working_directory": "/src"}),
                    ("apply_patch", {"type": "create_file", "path": "hello.txt", "diff": "+hello"}),
                ]
            ),
            Reply(text="all done"),
        ],
    )
    if stream:
        async with await sdk.responses.create(model=model, input="work", tools=TOOLS, stream=True) as events:
            seen = [event async for event in events]
        first = seen[-1].response
        added = [event.item.type for event in seen if event.type == "response.output_item.added"]
        assert added == ["shell_call", "local_shell_call", "apply_patch_call"]
    else:
        first = await sdk.responses.create(model=model, input="work", tools=TOOLS)
    assert first.status == "completed"
    shell, local, patch = first.output
    assert shell.type == "shell_call" and shell.environment.type == "local" and shell.action.commands == ["ls -la"]
    assert shell.action.timeout_ms == 5000 and shell.status == "completed"
    assert local.type == "local_shell_call" and local.action.command == ["git", "status"]
    assert local.action.working_directory == "/src"
    assert patch.type == "apply_patch_call" and patch.operation.type == "create_file"
    assert patch.operation.path == "hello.txt" and patch.operation.diff == "+hello"
    offered = [tool["function"]["name"] for tool in backend.requests(model)[0]["tools"]]
    assert offered == ["shell", "local_shell", "apply_patch"]

    second = await sdk.responses.create(
        model=model,
        previous_response_id=first.id,
        tools=TOOLS,
        input=[
            {
                "type": "shell_call_output",
                "call_id": shell.call_id,
                "output": [{"stdout": "total 0", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
            },
            {"type": "local_shell_call_output", "id": local.call_id, "output": "nothing to commit"},
            {"type": "apply_patch_call_output", "call_id": patch.call_id, "status": "completed", "output": "created"},
        ],
    )
    assert second.status == "completed" and second.output_text == "all done"
    assert tool_messages(backend, model, 1) == ["total 0\n(exit code 0)", "nothing to commit", "completed: created"]
    assistant = [m for m in backend.requests(model)[1]["messages"] if m["role"] == "assistant"][0]
    assert [call["function"]["name"] for call in assistant["tool_calls"]] == ["shell", "local_shell", "apply_patch"]


async def test_a_whole_history_sent_back_as_items(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    """Without `previous_response_id`: the calls and their outputs, as input items."""
    backend.script(model, [Reply(text="seen")])
    answer = await sdk.responses.create(
        model=model,
        tools=[{"type": "shell"}],
        input=[
            {"role": "user", "content": "list"},
            {"type": "shell_call", "call_id": "call_1", "action": {"commands": ["ls"]}, "status": "completed"},
            {
                "type": "shell_call_output",
                "call_id": "call_1",
                "output": [{"stdout": "a.txt", "stderr": "", "outcome": {"type": "timeout"}}],
            },
        ],
    )
    assert answer.output_text == "seen"
    messages = backend.requests(model)[0]["messages"]
    assert messages[1]["tool_calls"][0]["function"] == {"name": "shell", "arguments": '{"commands": ["ls"]}'}
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "a.txt\n(timed out)"}
