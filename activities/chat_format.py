"""Pure conversion between Responses API items and chat-completion messages. No I/O.

`items_to_messages` is the one place that dispatches on an item's `type`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from pydantic import TypeAdapter

from models.ids import new_id
from models.items import (
    InputItem,
    McpApprovalRequestItem,
    McpCallItem,
    MessageItem,
    OutputFunctionCall,
    OutputItem,
    OutputMessage,
    OutputText,
    Refusal,
)
from models.mcp import McpFunction
from models.responses import Response

ChatMessage = dict[str, Any]

_input_item = TypeAdapter(InputItem)


def parse_items(raw_items: list[dict[str, Any]]) -> list[Any]:
    return [_input_item.validate_python(raw) for raw in raw_items]


# ---- Responses items -> chat messages -------------------------------------------------------


NOT_RUN = "The call was not run: the user did not approve it."


def items_to_messages(items: list[Any], tool_results: dict[str, str] | None = None) -> list[ChatMessage]:
    """Consecutive function calls (and the assistant text before them) share one message.
    `tool_results`: what calls run by this response returned, by chat tool-call id; an
    approval request in `items` is followed by its call's result (or by "not run")."""
    results = tool_results or {}
    messages: list[ChatMessage] = []
    for item in items:
        match item.type:
            case "message":
                messages.append(_message(item))
            case "function_call":
                _append_tool_call(messages, item.call_id, item.name, item.arguments)
            case "function_call_output":
                messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output_text()})
            case "mcp_call":
                _append_tool_call(messages, item.chat_call_id, item.name, item.arguments)
                messages.append(_tool_message(item.chat_call_id, item.result_text()))
            case "mcp_approval_request":
                _append_tool_call(messages, item.id, item.name, item.arguments)
                messages.append(_tool_message(item.id, results.get(item.id, NOT_RUN)))
            case "reasoning" | "mcp_list_tools" | "mcp_approval_response":
                continue  # nothing a chat-completions backend takes; approvals act through `tool_results`
            case other:
                raise ValueError(f"item type {other!r} cannot be sent to a chat-completions backend")
    return messages


def tool_messages(tool_results: dict[str, str]) -> list[ChatMessage]:
    return [_tool_message(call_id, text) for call_id, text in tool_results.items()]


def _tool_message(call_id: str, text: str) -> ChatMessage:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _message(item: MessageItem) -> ChatMessage:
    role = "system" if item.role == "developer" else item.role
    parts = item.content_parts()
    if all(part.type in ("input_text", "output_text", "refusal") for part in parts):
        return {"role": role, "content": "".join(_part_text(part) for part in parts)}
    return {"role": role, "content": [_chat_part(part) for part in parts]}


def _part_text(part: Any) -> str:
    return part.refusal if part.type == "refusal" else part.text


def _chat_part(part: Any) -> dict[str, Any]:
    match part.type:
        case "input_text" | "output_text" | "refusal":
            return {"type": "text", "text": _part_text(part)}
        case "input_image":
            return {"type": "image_url", "image_url": {"url": part.image_url, "detail": part.detail}}
        case "input_file":
            return {"type": "file", "file": {"file_data": part.file_data, "filename": part.filename}}
    raise ValueError(f"content part type {part.type!r} is not supported")


def _append_tool_call(messages: list[ChatMessage], call_id: str, name: str, arguments: str) -> None:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    last = messages[-1] if messages else None
    if last is not None and last["role"] == "assistant":
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


# ---- the chat-completions request ----------------------------------------------------------


def build_chat_request(
    response: Response, context: list[ChatMessage], base_url: str, mcp_functions: list[McpFunction] | None = None
) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for one inference call."""
    messages = list(context)
    if response.instructions:
        messages.insert(0, {"role": "system", "content": response.instructions})
    request: dict[str, Any] = {"model": response.model, "messages": messages}
    tools = [_function_tool(tool) for tool in response.tools if tool.type == "function"]
    tools += [function.chat_tool() for function in mcp_functions or []]
    if tools:
        request["tools"] = tools
        request["tool_choice"] = _tool_choice(response.tool_choice, mcp_functions or [])
        request["parallel_tool_calls"] = response.parallel_tool_calls
    if response.temperature is not None:
        request["temperature"] = response.temperature
    if response.top_p is not None:
        request["top_p"] = response.top_p
    if response.max_output_tokens is not None:
        request[_max_tokens_parameter(base_url)] = response.max_output_tokens
    if response.reasoning.effort is not None:
        request["reasoning_effort"] = response.reasoning.effort
    response_format = _response_format(response)
    if response_format is not None:
        request["response_format"] = response_format
    return request


def _function_tool(tool: Any) -> dict[str, Any]:
    described = {"name": tool.name, "description": tool.description, "parameters": tool.parameters,
                 "strict": tool.strict}
    return {"type": "function", "function": {key: value for key, value in described.items() if value is not None}}


def _tool_choice(choice: Any, mcp_functions: list[McpFunction]) -> Any:
    if isinstance(choice, str):
        return choice
    if choice.type == "mcp":
        names = [function.function_name for function in mcp_functions
                 if function.server_label == choice.server_label and choice.name in (None, function.tool_name)]
        return {"type": "function", "function": {"name": names[0]}} if len(names) == 1 else "required"
    return {"type": "function", "function": {"name": choice.name}}


def _max_tokens_parameter(base_url: str) -> str:
    """OpenAI wants `max_completion_tokens`; most other backends only know `max_tokens`."""
    return "max_completion_tokens" if urlparse(base_url).hostname == "api.openai.com" else "max_tokens"


def _response_format(response: Response) -> dict[str, Any] | None:
    text_format = response.text.format
    match text_format.type:
        case "json_schema":
            schema: dict[str, Any] = {"name": text_format.name, "schema": text_format.schema_}
            if text_format.strict is not None:
                schema["strict"] = text_format.strict
            if text_format.description is not None:
                schema["description"] = text_format.description
            return {"type": "json_schema", "json_schema": schema}
        case "json_object":
            return {"type": "json_object"}
    return None


# ---- the chat-completions answer -> Responses output items ---------------------------------


def assistant_to_output(message: ChatMessage, mcp_functions: list[McpFunction] | None = None) -> list[OutputItem]:
    """Output items of a reply. A call of an MCP tool becomes an `mcp_call` to run, or an
    `mcp_approval_request`; its chat tool-call id becomes the item's id (so it is mutated in
    `message`), which ties the result to the call in the chat context."""
    functions = {function.function_name: function for function in mcp_functions or []}
    output: list[OutputItem] = []
    parts: list[Any] = []
    if message.get("content"):
        parts.append(OutputText(type="output_text", text=message["content"]))
    if message.get("refusal"):
        parts.append(Refusal(type="refusal", refusal=message["refusal"]))
    if parts:
        output.append(OutputMessage(id=new_id("msg"), content=parts))
    for call in message.get("tool_calls") or []:
        function = call["function"]
        mcp = functions.get(function["name"])
        if mcp is not None:
            item = mcp_item(mcp, function.get("arguments") or "{}")
            call["id"] = item.id
            output.append(item)
            continue
        output.append(
            OutputFunctionCall(
                id=new_id("fc"),
                call_id=call["id"],
                name=function["name"],
                arguments=function.get("arguments") or "{}",
            )
        )
    return output


def mcp_item(function: McpFunction, arguments: str, item_id: str | None = None) -> McpCallItem | McpApprovalRequestItem:
    """The item of a model's call of an MCP tool: a request for approval, or a call to run."""
    if function.requires_approval:
        return McpApprovalRequestItem(id=item_id or new_id("mcpr"), server_label=function.server_label,
                                      name=function.tool_name, arguments=arguments)
    return McpCallItem(id=item_id or new_id("mcp"), server_label=function.server_label, name=function.tool_name,
                       arguments=arguments, status="in_progress")


def assistant_message(message: ChatMessage) -> ChatMessage:
    """The reply as it is kept in the chat context (only what a follow-up call needs)."""
    kept: ChatMessage = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        kept["tool_calls"] = [
            {"id": call["id"], "type": "function", "function": call["function"]} for call in message["tool_calls"]
        ]
    return kept

