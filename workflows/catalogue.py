"""Pure: the request's MCP tools and their servers' listings -> the functions the model sees.

A tool keeps its own name unless another server or a function tool has it too; then it is
called `<server_label>__<name>`. Whether a call needs approval is decided here, once, from
the tool's `require_approval`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from models.items import McpListToolsItem
from models.mcp import McpFunction

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def mcp_functions(tools: Sequence[Any], listings: Mapping[str, McpListToolsItem]) -> list[McpFunction]:
    function_names = {tool.name for tool in tools if tool.type == "function"}
    offered = [
        (tool, listed)
        for tool in tools
        if tool.type == "mcp" and tool.server_label in listings
        for listed in listings[tool.server_label].tools
        if tool.allows(listed.name, listed.read_only)
    ]
    counts = Counter(listed.name for _, listed in offered)
    functions = []
    for tool, listed in offered:
        name = listed.name
        if counts[name] > 1 or name in function_names or _UNSAFE.search(name) or len(name) > 64:
            name = _UNSAFE.sub("_", f"{tool.server_label}__{listed.name}")[:64]
        functions.append(
            McpFunction(
                function_name=name,
                server_label=tool.server_label,
                tool_name=listed.name,
                requires_approval=tool.requires_approval(listed.name, listed.read_only),
                description=listed.description,
                parameters=listed.input_schema,
            )
        )
    return functions
