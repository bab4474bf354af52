"""The hosted tools: tools this server runs for the model (a web search, a file search, code),
each one record that every layer reads.

A chat-completions backend knows functions only, so each hosted tool is offered to the model
as one function (`function`, with `description` and `parameters`). The model's call of it
becomes the tool's call item (`item_type`, its id prefixed `id_prefix`, made by `call_item`
from the model's arguments); the item's id is the chat tool-call id. Which layer reads what:

- the request (`models/tools.py`): the tool types that ask for it (`tool_types`);
- the API (`response_service/preparation.py`): the id prefix of its items sent back as input;
- the tool table (`chat_completions/tool_table.py`): the function it offers, under a name kept unique;
- the chat dialect (`chat_completions/converter.py`, `chat_completions/stream_assembler.py`): the item
  a call becomes, announced by the step that runs it, not by the stream;
- the turn (`workflows/turn.py`): its items are calls this server runs;
- the run (`workflows/hosted_calls.py`): the activity (`activity`) that runs one call.

Adding a hosted tool is adding a record here and its runner there (`docs/development.md`,
"Adding a hosted tool").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models import activity_names
from models.code_items import CodeInterpreterCallItem, ShellAction, ShellCallItem, ShellEnvironment
from models.ids import new_id
from models.items import FileSearchCallItem, WebSearchAction, WebSearchCallItem

MAX_QUERY_CHARS = 2_000


QUERY_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to search for."}},
    "required": ["query"],
    "additionalProperties": False,
}


def query_of(arguments: str) -> str:
    """The `query` of a model's search (its whole arguments, when it sent something else)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments.strip()[:MAX_QUERY_CHARS]
    query = parsed.get("query") if isinstance(parsed, dict) else None
    return (query if isinstance(query, str) else arguments).strip()[:MAX_QUERY_CHARS]


@dataclass(frozen=True)
class HostedTool:
    name: str
    """What the tool is called (its documentation's name)."""
    tool_types: tuple[str, ...]
    """The `type`s of a request's tool that ask for it."""
    item_type: str
    id_prefix: str
    function: str
    """The name of the function the model sees (another, should a client tool have it)."""
    description: str
    parameters: dict[str, Any]
    activity: str
    call_item: Callable[[str, str, Any], Any]
    """The model's arguments, the item's id and the request's tool -> the call item."""
    needs_setup: bool = False
    """Offered only where the server is set up to run it (`web_search`: a search provider);
    elsewhere a request's tool for it is accepted, and not offered to the model."""
    output_item_type: str | None = None
    """The type of the item that follows each call with what it returned (`shell_call_output`),
    if its results are an item of their own."""
    wanted: Callable[[Any], bool] = lambda _tool: True
    """Whether a request's tool of one of `tool_types` asks for this one (a shell: one in a
    container; a local one is the client's, `models/client_tools.py`)."""
    runs: Callable[[Any], bool] = lambda _call: True
    """Whether an item of `item_type` is a call of this one (a `shell_call` the client runs is
    not)."""

    def offered(self, tools: Any) -> Any | None:
        """The request's tool that asks for this one, if any."""
        return next((tool for tool in tools if tool.type in self.tool_types and self.wanted(tool)), None)

    def chat_function(self, name: str) -> dict[str, Any]:
        """The function as a chat-completions request offers it."""
        return {
            "type": "function",
            "function": {"name": name, "description": self.description, "parameters": self.parameters},
        }

    def new_item(self, arguments: str, tool: Any, item_id: str | None = None) -> Any:
        return self.call_item(arguments, item_id or new_id(self.id_prefix), tool)


WEB_SEARCH = HostedTool(
    name="web_search",
    tool_types=("web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11"),
    item_type="web_search_call",
    id_prefix="ws",
    function="web_search",
    description="Search the web. Answers with numbered results; cite a result you use with its number in "
    "brackets, like [1].",
    parameters=QUERY_PARAMETERS,
    activity=activity_names.WEB_SEARCH,
    call_item=lambda arguments, item_id, _tool: WebSearchCallItem(
        id=item_id, action=WebSearchAction(query=query_of(arguments))
    ),
    needs_setup=True,
)

FILE_SEARCH = HostedTool(
    name="file_search",
    tool_types=("file_search",),
    item_type="file_search_call",
    id_prefix="fs",
    function="file_search",
    description="Search the user's files. Answers with numbered passages; cite a passage you use with its "
    "number in brackets, like [1].",
    parameters=QUERY_PARAMETERS,
    activity=activity_names.FILE_SEARCH,
    call_item=lambda arguments, item_id, _tool: FileSearchCallItem(id=item_id, queries=[query_of(arguments)]),
)

CODE_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"code": {"type": "string", "description": "The Python code to run."}},
    "required": ["code"],
    "additionalProperties": False,
}
MAX_CODE_CHARS = 256 * 1024


def code_of(arguments: str) -> str:
    """The `code` of a model's call (its whole arguments, when it sent something else); past
    `MAX_CODE_CHARS` it is cut one character beyond, and the call refuses it."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments[: MAX_CODE_CHARS + 1]
    code = parsed.get("code") if isinstance(parsed, dict) else None
    return (code if isinstance(code, str) else arguments)[: MAX_CODE_CHARS + 1]


CODE_INTERPRETER = HostedTool(
    name="code_interpreter",
    tool_types=("code_interpreter",),
    item_type="code_interpreter_call",
    id_prefix="ci",
    function="code_interpreter",
    description="Run Python code in a stateful sandbox (variables persist between calls) with numpy, pandas and "
    "matplotlib. What it prints is shown to you; save files to /mnt/data (a figure left open is saved "
    "there too) and link to them as sandbox:/mnt/data/<name>. No network.",
    parameters=CODE_PARAMETERS,
    activity=activity_names.RUN_CODE,
    call_item=lambda arguments, item_id, tool: CodeInterpreterCallItem(
        id=item_id, code=code_of(arguments), container_id=tool.container_id
    ),
    needs_setup=True,
)

SHELL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "commands": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Shell commands, run one after the other with bash -c.",
        },
        "timeout_ms": {"type": "integer", "description": "How long each command may run, in milliseconds."},
        "max_output_length": {
            "type": "integer",
            "description": "At most this many characters of each command's output are shown to you.",
        },
    },
    "required": ["commands"],
    "additionalProperties": False,
}
MAX_COMMANDS = 32
MAX_COMMAND_CHARS = 64 * 1024
MAX_COMMANDS_CHARS = 128 * 1024
"""A call's commands together (they travel through Temporal, within its payload limit)."""


def shell_action(arguments: str) -> ShellAction:
    """The model's commands and limits, as far as they make sense (what does not is left out;
    a model that sent no list has its whole arguments run as one command)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        return ShellAction(commands=[arguments[: MAX_COMMAND_CHARS + 1]])
    given = parsed.get("commands")
    commands = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    timeout, length = parsed.get("timeout_ms"), parsed.get("max_output_length")
    return ShellAction(
        commands=[command[: MAX_COMMAND_CHARS + 1] for command in commands if isinstance(command, str)][
            : MAX_COMMANDS + 1
        ],
        timeout_ms=timeout if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout > 0 else None,
        max_output_length=length if isinstance(length, int) and not isinstance(length, bool) and length > 0 else None,
    )


SHELL = HostedTool(
    name="shell",
    tool_types=("shell",),
    item_type="shell_call",
    id_prefix="sh",
    function="shell",
    description="Run shell commands (bash) in a sandboxed Linux container, one after the other: their output and "
    "exit codes are shown to you. The container keeps its files between calls; write files for the user to "
    "/mnt/data and link to them as sandbox:/mnt/data/<name>. Python 3 with numpy, pandas and matplotlib is "
    "installed. No network.",
    parameters=SHELL_PARAMETERS,
    activity=activity_names.RUN_SHELL,
    call_item=lambda arguments, item_id, tool: ShellCallItem(
        id=item_id,
        call_id=item_id,
        action=shell_action(arguments),
        environment=ShellEnvironment(container_id=tool.container_id),
    ),
    needs_setup=True,
    output_item_type="shell_call_output",
    wanted=lambda tool: tool.runs_here,
    runs=lambda call: bool(getattr(call, "runs_here", False)),
)

HOSTED_TOOLS: tuple[HostedTool, ...] = (WEB_SEARCH, FILE_SEARCH, CODE_INTERPRETER, SHELL)
"""Every hosted tool, in the order their functions are offered."""
BY_ITEM_TYPE = {tool.item_type: tool for tool in HOSTED_TOOLS}
HOSTED_ITEM_TYPES = tuple(BY_ITEM_TYPE)


def is_hosted_call(item: Any) -> bool:
    """A call of a hosted tool: one this server runs."""
    hosted = BY_ITEM_TYPE.get(item.type)
    return hosted is not None and hosted.runs(item)
