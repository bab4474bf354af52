"""Pure conversion between Responses API items and chat-completion messages. No I/O.

`items_to_messages` is the one place that dispatches on an item's `type`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from pydantic import TypeAdapter

from models.ids import new_id
from models.items import (
    FunctionCallItem,
    InputItem,
    MessageItem,
    OutputFunctionCall,
    OutputItem,
    OutputMessage,
    OutputText,
    Refusal,
)
from models.responses import Response

ChatMessage = dict[str, Any]

_input_item = TypeAdapter(InputItem)


def parse_items(raw_items: list[dict[str, Any]]) -> list[Any]:
    return [_input_item.validate_python(raw) for raw in raw_items]


# ---- Responses items -> chat messages -------------------------------------------------------


def items_to_messages(items: list[Any]) -> list[ChatMessage]:
    """Consecutive function calls (and the assistant text before them) share one message."""
    messages: list[ChatMessage] = []
    for item in items:
        match item.type:
            case "message":
                messages.append(_message(item))
            case "function_call":
                _append_tool_call(messages, item.call_id, item.name, item.arguments)
            case "function_call_output":
                messages.append({"role": "tool", "tool_call_id": item.call_id, "content": item.output_text()})
            case "reasoning":
                continue  # chat completions takes no reasoning input
            case other:
                raise ValueError(f"item type {other!r} cannot be sent to a chat-completions backend")
    return messages


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


def output_to_messages(output: list[Any]) -> list[ChatMessage]:
    """What a response produced (messages, function calls) as chat messages."""
    items: list[Any] = []
    for item in output:
        match item.type:
            case "message":
                items.append(MessageItem(role="assistant", content=item.content))
            case "function_call":
                items.append(
                    FunctionCallItem(type="function_call", call_id=item.call_id, name=item.name, arguments=item.arguments)
                )
    return items_to_messages(items)


# ---- the chat-completions request ----------------------------------------------------------


def build_chat_request(response: Response, context: list[ChatMessage], base_url: str) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for one inference call."""
    messages = list(context)
    if response.instructions:
        messages.insert(0, {"role": "system", "content": response.instructions})
    request: dict[str, Any] = {"model": response.model, "messages": messages}
    if response.tools:
        request["tools"] = [
            {
                "type": "function",
                "function": {
                    key: value
                    for key, value in {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                        "strict": tool.strict,
                    }.items()
                    if value is not None
                },
            }
            for tool in response.tools
        ]
        request["tool_choice"] = _tool_choice(response.tool_choice)
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


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, str):
        return choice
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


def assistant_to_output(message: ChatMessage) -> list[OutputItem]:
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
        output.append(
            OutputFunctionCall(
                id=new_id("fc"),
                call_id=call["id"],
                name=function["name"],
                arguments=function.get("arguments") or "{}",
            )
        )
    return output


def assistant_message(message: ChatMessage) -> ChatMessage:
    """The reply as it is kept in the chat context (only what a follow-up call needs)."""
    kept: ChatMessage = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        kept["tool_calls"] = [
            {"id": call["id"], "type": "function", "function": call["function"]} for call in message["tool_calls"]
        ]
    return kept

