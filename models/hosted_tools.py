"""The hosted tools: tools this server runs for the model (a web search, a file search, code),
each one record that every layer reads.

A chat-completions backend knows functions only, so each hosted tool is offered to the model
as one function (`function`, with `description` and `parameters`). The model's call of it
becomes the tool's call item (`item_type`, its id prefixed `id_prefix`, made by `call_item`
from the model's arguments); the item's id is the chat tool-call id. Which layer reads what:

- the request (`models/tools.py`): the tool types that ask for it (`tool_types`);
- the API (`api/preparation.py`): the id prefix of its items sent back as input;
- the tool table (`workflows/catalogue.py`): the function it offers, under a name kept unique;
- the chat dialect (`activities/chat_format.py`, `activities/stream_assembler.py`): the item
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
from models.ids import new_id
from models.items import CodeInterpreterCallItem, FileSearchCallItem, WebSearchAction, WebSearchCallItem

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

    def offered(self, tools: Any) -> Any | None:
        """The request's tool that asks for this one, if any."""
        return next((tool for tool in tools if tool.type in self.tool_types), None)

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
    """The `code` of a model's call (its whole arguments, when it sent something else)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments[:MAX_CODE_CHARS]
    code = parsed.get("code") if isinstance(parsed, dict) else None
    return (code if isinstance(code, str) else arguments)[:MAX_CODE_CHARS]


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

HOSTED_TOOLS: tuple[HostedTool, ...] = (WEB_SEARCH, FILE_SEARCH, CODE_INTERPRETER)
"""Every hosted tool, in the order their functions are offered."""
BY_ITEM_TYPE = {tool.item_type: tool for tool in HOSTED_TOOLS}
HOSTED_ITEM_TYPES = tuple(BY_ITEM_TYPE)
