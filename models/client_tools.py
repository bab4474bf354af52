"""The client's typed tools: tools OpenAI defines whose calls the client runs, each one record
that every layer reads (as `models/hosted_tools.py` does for the tools this server runs).

A chat-completions backend knows functions only, so each is offered to the model as one
function; the model's call of it becomes the tool's own item (`shell_call` in a `local`
environment, `local_shell_call`, `apply_patch_call`), the response ends with it as with a
function call, and the client sends back the item's output (`shell_call_output`,
`local_shell_call_output`, `apply_patch_call_output`), which the model is shown as the call's
result. In the chat history each call is the function call it was, and each output a tool
message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models.code_items import (
    ApplyPatchCallItem,
    ApplyPatchCreate,
    ApplyPatchDelete,
    ApplyPatchOperation,
    ApplyPatchUpdate,
    LocalEnvironment,
    LocalShellAction,
    LocalShellCallItem,
    ShellCallItem,
)
from models.hosted_tools import SHELL_PARAMETERS, shell_action
from models.ids import new_id

MAX_ARGUMENT_CHARS = 256 * 1024


@dataclass(frozen=True)
class ClientTool:
    name: str
    tool_type: str
    """The `type` of a request's tool that asks for it."""
    item_type: str
    output_type: str
    """The item the client sends back with what the call returned."""
    id_prefix: str
    function: str
    description: str
    parameters: dict[str, Any]
    call_item: Callable[[str, str, str], Any]
    """The model's arguments, the item's id and the call's id -> the call item."""
    arguments_of: Callable[[Any], str]
    """A call item (as output, or as the client sends it back) -> the function's arguments."""
    result_of: Callable[[Any], str]
    """An output item -> what the model is told the call returned."""
    wanted: Callable[[Any], bool] = lambda _tool: True
    """Whether a request's tool of `tool_type` asks for this one (a shell: only a local one)."""

    def offered(self, tools: Any) -> Any | None:
        return next((tool for tool in tools if tool.type == self.tool_type and self.wanted(tool)), None)

    def chat_function(self, name: str) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": name, "description": self.description, "parameters": self.parameters},
        }

    def new_item(self, arguments: str, call_id: str, item_id: str | None = None) -> Any:
        return self.call_item(arguments[:MAX_ARGUMENT_CHARS], item_id or new_id(self.id_prefix), call_id)


def _parsed(arguments: str) -> dict[str, Any]:
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [each for each in value if isinstance(each, str)] if isinstance(value, list) else []


def _shell_result(output: Any) -> str:
    parts = []
    for each in output.output:
        end = "timed out" if each.outcome.type == "timeout" else f"exit code {each.outcome.exit_code}"
        text = each.stdout + (f"\nstderr:\n{each.stderr}" if each.stderr else "")
        parts.append(f"{text}\n({end})" if text else f"({end})")
    return "\n\n".join(parts) or "(no output)"


LOCAL_SHELL = ClientTool(
    name="shell",
    tool_type="shell",
    item_type="shell_call",
    output_type="shell_call_output",
    id_prefix="sh",
    function="shell",
    description="Run shell commands on the user's machine, one after the other: their output and exit codes "
    "are shown to you.",
    parameters=SHELL_PARAMETERS,
    call_item=lambda arguments, item_id, call_id: ShellCallItem(
        id=item_id, call_id=call_id, action=shell_action(arguments), environment=LocalEnvironment(), status="completed"
    ),
    arguments_of=lambda call: json.dumps(call.action.model_dump(exclude_none=True)),
    result_of=_shell_result,
    wanted=lambda tool: not tool.runs_here,
)


LOCAL_SHELL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "description": "The command and its arguments."},
        "working_directory": {"type": "string"},
        "timeout_ms": {"type": "integer"},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["command"],
    "additionalProperties": False,
}


def _local_shell_action(arguments: str) -> LocalShellAction:
    parsed = _parsed(arguments)
    timeout, directory, env = parsed.get("timeout_ms"), parsed.get("working_directory"), parsed.get("env")
    return LocalShellAction(
        command=_strings(parsed.get("command")) or ([arguments] if not parsed else []),
        env={key: value for key, value in env.items() if isinstance(value, str)} if isinstance(env, dict) else {},
        timeout_ms=timeout if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0 else None,
        working_directory=directory if isinstance(directory, str) else None,
    )


LOCAL_SHELL_EXEC = ClientTool(
    name="local_shell",
    tool_type="local_shell",
    item_type="local_shell_call",
    output_type="local_shell_call_output",
    id_prefix="lsh",
    function="local_shell",
    description="Run a command on the user's machine: its output is shown to you.",
    parameters=LOCAL_SHELL_PARAMETERS,
    call_item=lambda arguments, item_id, call_id: LocalShellCallItem(
        id=item_id, call_id=call_id, action=_local_shell_action(arguments)
    ),
    arguments_of=lambda call: json.dumps(call.action.model_dump(exclude={"type"}, exclude_none=True)),
    result_of=lambda output: output.output,
)


APPLY_PATCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "type": {"type": "string", "enum": ["create_file", "update_file", "delete_file"]},
        "path": {"type": "string", "description": "The file's path."},
        "diff": {"type": "string", "description": "The change, as a unified diff (none to delete a file)."},
    },
    "required": ["type", "path"],
    "additionalProperties": False,
}


def _operation(arguments: str) -> ApplyPatchOperation:
    parsed = _parsed(arguments)
    path = parsed.get("path") if isinstance(parsed.get("path"), str) else ""
    diff = parsed.get("diff") if isinstance(parsed.get("diff"), str) else ""
    match parsed.get("type"):
        case "delete_file":
            return ApplyPatchDelete(type="delete_file", path=path)
        case "create_file":
            return ApplyPatchCreate(type="create_file", path=path, diff=diff)
    return ApplyPatchUpdate(type="update_file", path=path, diff=diff)


APPLY_PATCH = ClientTool(
    name="apply_patch",
    tool_type="apply_patch",
    item_type="apply_patch_call",
    output_type="apply_patch_call_output",
    id_prefix="apc",
    function="apply_patch",
    description="Create, update or delete a file on the user's machine with a unified diff.",
    parameters=APPLY_PATCH_PARAMETERS,
    call_item=lambda arguments, item_id, call_id: ApplyPatchCallItem(
        id=item_id, call_id=call_id, operation=_operation(arguments)
    ),
    arguments_of=lambda call: json.dumps(call.operation.model_dump()),
    result_of=lambda output: f"{output.status}" + (f": {output.output}" if output.output else ""),
)

CLIENT_TOOLS: tuple[ClientTool, ...] = (LOCAL_SHELL, LOCAL_SHELL_EXEC, APPLY_PATCH)
BY_ITEM_TYPE = {tool.item_type: tool for tool in CLIENT_TOOLS}
BY_OUTPUT_TYPE = {tool.output_type: tool for tool in CLIENT_TOOLS}
CLIENT_KINDS = tuple(f"client:{tool.item_type}" for tool in CLIENT_TOOLS)
"""The stream assembler's kinds of their calls (a `shell_call` the client runs is not one this
server runs)."""


def is_client_call(item: Any) -> bool:
    """A call the client runs, of one of these tools."""
    if item.type == "shell_call":
        return not getattr(item, "runs_here", False)
    return item.type in BY_ITEM_TYPE
