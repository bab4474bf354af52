"""Pure: a request's tools and its MCP servers' listings -> the functions the model sees, and
back from a function the model called to the item it becomes.

A chat-completions backend knows functions only. So:

- a `function` tool is a function of its own name;
- a `custom` tool (free text input) is a function with one string argument, `input`;
- a tool inside a `namespace` is a function called `<namespace>__<name>`, and its calls carry
  `namespace` again;
- an MCP tool keeps its own name unless another server or a client tool has it too; then it is
  called `<server_label>__<name>`. Whether a call needs approval is decided here, once, from
  the tool's `require_approval`.

Names are cut to 64 characters of `[a-zA-Z0-9_-]`, what backends accept, and kept unique
(in linear time: a request may offer thousands).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from models.client_tools import BY_ITEM_TYPE as CLIENT_BY_ITEM_TYPE
from models.client_tools import CLIENT_TOOLS, ClientTool
from models.hosted_tools import HOSTED_TOOLS, HostedTool
from models.items import McpListToolsItem
from models.mcp import McpFunction

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
CUSTOM_INPUT = "input"
"""The one argument of a custom tool, as the model sees it."""


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name)[:64]


@dataclass(frozen=True)
class ClientFunction:
    """A tool the client runs, as the model sees it."""

    chat_name: str
    kind: Literal["function", "custom"]
    name: str
    namespace: str | None
    tool: Any
    """The request's `FunctionTool` or `CustomTool`."""

    def chat_tool(self) -> dict[str, Any]:
        tool = self.tool
        if self.kind == "function":
            described = {
                "name": self.chat_name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": tool.strict,
            }
            return {
                "type": "function",
                "function": {key: value for key, value in described.items() if value is not None},
            }
        return {
            "type": "function",
            "function": {
                "name": self.chat_name,
                "description": _custom_description(tool),
                "parameters": {
                    "type": "object",
                    "properties": {CUSTOM_INPUT: {"type": "string"}},
                    "required": [CUSTOM_INPUT],
                    "additionalProperties": False,
                },
            },
        }


def _custom_description(tool: Any) -> str:
    lines = [tool.description or f"The {tool.name} tool."]
    lines.append(f"Pass the tool's whole input, as free text, in the `{CUSTOM_INPUT}` argument.")
    if tool.format is not None and tool.format.type == "grammar":
        lines.append(f"The input must match this {tool.format.syntax} grammar:\n{tool.format.definition}")
    return "\n\n".join(lines)


class UniqueNames:
    """Names kept unique by a numbered suffix (`name`, `name_2`, `name_3`, ...), in linear time:
    each wanted name remembers the next suffix to try, so a thousand tools that all cut to
    the same 64 characters do not each try every suffix before theirs."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self.taken: set[str] = set(taken or ())
        self._next_suffix: dict[str, int] = {}

    def claim(self, wanted: str) -> str:
        name, suffix = wanted, self._next_suffix.get(wanted, 2)
        if name in self.taken:
            name = _numbered(wanted, suffix)
            while name in self.taken:
                suffix += 1
                name = _numbered(wanted, suffix)
            self._next_suffix[wanted] = suffix + 1
        self.taken.add(name)
        return name


def _numbered(wanted: str, suffix: int) -> str:
    """`wanted` with `_<suffix>`, within 64 characters (cut to 60 up to `_999`, as always)."""
    return f"{wanted[: min(60, 63 - len(str(suffix)))]}_{suffix}"


def client_functions(tools: Sequence[Any]) -> list[ClientFunction]:
    """Every function and custom tool of the request, namespaced ones included."""
    found: list[ClientFunction] = []
    names = UniqueNames()

    def add(tool: Any, namespace: str | None) -> None:
        chat_name = names.claim(_safe(f"{namespace}__{tool.name}" if namespace else tool.name))
        found.append(ClientFunction(chat_name, tool.type, tool.name, namespace, tool))

    for tool in tools:
        if tool.type in ("function", "custom"):
            add(tool, None)
        elif tool.type == "namespace":
            for inner in tool.tools:
                add(inner, tool.name)
    return found


def mcp_functions(
    tools: Sequence[Any], listings: Mapping[str, McpListToolsItem], parked: Collection[str] = ()
) -> list[McpFunction]:
    """The functions the model is offered from the listings; those of a listing in `parked`
    (a stub) name it, and the model call reads their descriptions and parameters back."""
    client_names = {function.chat_name for function in client_functions(tools)}
    offered = [
        (tool, listed, listings[tool.server_label].id)
        for tool in tools
        if tool.type == "mcp" and tool.server_label in listings
        for listed in listings[tool.server_label].tools
        if tool.allows(listed.name, listed.read_only)
    ]
    counts = Counter(listed.name for _, listed, _ in offered)
    names = UniqueNames(client_names)
    functions = []
    for tool, listed, listing_id in offered:
        name = listed.name
        if counts[name] > 1 or name in client_names or _UNSAFE.search(name) or len(name) > 64:
            name = _safe(f"{tool.server_label}__{listed.name}")
        name = names.claim(name)
        functions.append(
            McpFunction(
                function_name=name,
                server_label=tool.server_label,
                tool_name=listed.name,
                requires_approval=tool.requires_approval(listed.name, listed.read_only),
                description=listed.description,
                parameters=listed.input_schema,
                parked_in=listing_id if listing_id in parked else None,
            )
        )
    return functions


class ToolTable:
    """The functions the model sees for one inference call, by the names it calls them: the
    client's, the MCP servers', and one for each hosted tool the request asks for
    (`models/hosted_tools.py`), named as the record says (another name, should a client
    function have that one). `set_up`: the hosted tools that need setting up
    (`HostedTool.needs_setup`) and are (`web_search` with a search provider); a request's
    tool for one that is not is accepted and not offered."""

    def __init__(self, tools: Sequence[Any], mcp: Sequence[McpFunction] = (), *, set_up: Collection[str] = ()):
        self.client = {function.chat_name: function for function in client_functions(tools)}
        self.mcp = {function.function_name: function for function in mcp}
        self._client_by_name = {(function.namespace, function.name): function for function in self.client.values()}
        names = UniqueNames(set(self.client) | set(self.mcp))
        self.hosted: dict[str, HostedTool] = {}
        """Chat name -> the hosted tool it calls."""
        self.requested: dict[str, Any] = {}
        """Chat name -> the request's tool that asked for it."""
        for hosted in HOSTED_TOOLS:
            tool = hosted.offered(tools)
            if tool is not None and (hosted.name in set_up or not hosted.needs_setup):
                name = names.claim(hosted.function)
                self.hosted[name], self.requested[name] = hosted, tool
        self.typed: dict[str, ClientTool] = {
            names.claim(typed.function): typed for typed in CLIENT_TOOLS if typed.offered(tools) is not None
        }
        """Chat name -> the client's typed tool it calls (`models/client_tools.py`)."""
        self._typed_names = {typed.item_type: name for name, typed in self.typed.items()}

    def chat_tools(self) -> list[dict[str, Any]]:
        return (
            [function.chat_tool() for function in self.client.values()]
            + [function.chat_tool() for function in self.mcp.values()]
            + [hosted.chat_function(name) for name, hosted in self.hosted.items()]
            + [typed.chat_function(name) for name, typed in self.typed.items()]
        )

    def typed_name(self, item_type: str) -> str:
        """What the model calls a client's typed tool (also one this request no longer offers)."""
        return self._typed_names.get(item_type) or CLIENT_BY_ITEM_TYPE[item_type].function

    def chat_name(self, name: str, namespace: str | None) -> str:
        """What the model calls a client tool (also one this request no longer offers)."""
        function = self._client_by_name.get((namespace, name))
        if function is not None:
            return function.chat_name
        return _safe(f"{namespace}__{name}" if namespace else name)
