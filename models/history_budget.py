"""What may travel through Temporal's history, and how the rest stays out of it.

Temporal refuses a payload over 2 MB and a history over 50 MB: a workflow task that records
one fails, and fails again every time it is retried. So nothing whose size a client or a
model decides travels whole. An item over `PARK_ITEM_BYTES` (a long answer, a big tool
result, huge call arguments) travels as a stub: the same item with its heavy fields emptied.
The fields themselves are parked in the store (`store/parked.py`) under the item's id, and
restored where the item is needed whole: the final response, a tool call's arguments, a
tool result the model reads next.

Pure: the workflow, the activities and the API share these rules.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

PARK_ITEM_BYTES = 16 * 1024
"""Items larger than this (as JSON) travel as stubs; their heavy fields wait in the store."""

MAX_RESULT_BYTES = 512 * 1024
"""An activity result (once its items are stubs) larger than this fails its step instead: only
thousands of items could make one, and every result stays in history for good."""

MAX_LISTING_BYTES = 256 * 1024
"""An MCP server's tool listing larger than this fails the listing (a model offered more is
offered too much). One over `PARK_ITEM_BYTES` travels as a stub like any large item: its
tools' names and annotations (what the workflow decides on), their descriptions and input
schemas parked, read back by the model call that offers them."""

LISTING = "mcp_list_tools"

MAX_HISTORY_BYTES = 16 * 1024 * 1024
"""A response whose workflow history has grown past this fails before its next inference call
(Temporal warns at 10 MB and ends a workflow at 50 MB)."""

MAX_WORKFLOW_INPUT_BYTES = 1024 * 1024
"""What a response's workflow starts with (instructions, tools, metadata, the chain's MCP
listings and the approvals it carries), well under Temporal's 2 MB."""

HEAVY_FIELDS: dict[str, dict[str, Any]] = {
    # item type -> its heavy fields, each with the value a stub has instead
    "message": {"content": []},
    "reasoning": {"content": None, "summary": [], "encrypted_content": None},
    "function_call": {"arguments": ""},
    "custom_tool_call": {"input": ""},
    "mcp_call": {"arguments": "", "output": None, "error": None},
    "mcp_approval_request": {"arguments": ""},
    "compaction": {"encrypted_content": "-"},
    "file_search_call": {"results": None},  # (never empty: a compaction item's content is required)
}


def size_of(model: BaseModel) -> int:
    return len(model.__pydantic_serializer__.to_json(model))


def heavy_fields(item: BaseModel) -> dict[str, Any]:
    """The item's heavy fields as JSON values."""
    if getattr(item, "type", "") == LISTING:
        return {"tools": item.model_dump(mode="json")["tools"]}
    stub = HEAVY_FIELDS.get(getattr(item, "type", ""), {})
    dumped = item.model_dump(mode="json", include=set(stub))
    return {name: dumped.get(name) for name in stub}


def stubbed(item: BaseModel) -> BaseModel:
    if getattr(item, "type", "") == LISTING:  # names and annotations stay: the workflow decides on them
        return item.model_copy(
            update={
                "tools": [
                    tool.model_copy(update={"description": None, "input_schema": {}})
                    for tool in getattr(item, "tools")  # noqa: B009 - any listing model
                ]
            }
        )
    return item.model_copy(update=HEAVY_FIELDS.get(getattr(item, "type", ""), {}))


def restored(item: BaseModel, fields: dict[str, Any]) -> BaseModel:
    """A stub with its parked fields back: each field it still has empty (one the workflow
    set since, like a failed call's error, stays), validated again so nested models are models.
    A listing never changes once listed: its tools come back whole."""
    if getattr(item, "type", "") == LISTING:
        return (
            type(item).model_validate(item.model_dump(mode="json") | {"tools": fields["tools"]})
            if "tools" in fields
            else item
        )
    stub = HEAVY_FIELDS.get(getattr(item, "type", ""), {})
    current = item.model_dump(mode="json")
    back = {name: value for name, value in fields.items() if name in stub and current.get(name) == stub[name]}
    return type(item).model_validate(current | back) if back else item


def should_park(item: BaseModel) -> bool:
    kind = getattr(item, "type", "")
    return (kind in HEAVY_FIELDS or kind == LISTING) and size_of(item) > PARK_ITEM_BYTES


def split(items: list[Any]) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """Items as they travel (the large ones as stubs), and the parked fields by item id."""
    carried: list[Any] = []
    parked: dict[str, dict[str, Any]] = {}
    for item in items:
        if should_park(item):
            parked[item.id] = heavy_fields(item)
            carried.append(stubbed(item))
        else:
            carried.append(item)
    return carried, parked


class ToolResult(BaseModel):
    """What a tool run since the last inference call returned, as the workflow carries it:
    the text the model is told, or, when the call's result is parked, the call's item id."""

    text: str = ""
    parked_in: str | None = None


def call_result_text(fields: dict[str, Any]) -> str:
    """What the model is told an MCP call returned, from the call's parked fields."""
    from models.items import McpCallItem

    call = McpCallItem.model_validate({"id": "parked", "server_label": "", "name": "", "arguments": ""} | fields)
    return call.result_text()
