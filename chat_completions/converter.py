"""Pure conversion between Responses API items and chat-completion messages. No I/O.

`items_to_messages` is the one place that dispatches on an item's `type`. Tool names go
through `tool_table.ToolTable` both ways.

Reasoning: backends that think aloud (vLLM, SGLang, DeepSeek's, Ollama) return it as
`reasoning_content` (or `reasoning`) beside the message. It becomes a `reasoning` item before
the turn's message and calls, and is kept with the assistant message in the chat context;
it is sent back upstream only to backends configured to take it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from pydantic import TypeAdapter

from chat_completions.tool_table import CUSTOM_INPUT, ToolTable
from context import compaction
from models.client_tools import BY_ITEM_TYPE as CLIENT_BY_ITEM_TYPE
from models.client_tools import BY_OUTPUT_TYPE as CLIENT_BY_OUTPUT_TYPE
from models.client_tools import is_client_call
from models.hosted_tools import HOSTED_ITEM_TYPES, is_hosted_call
from models.ids import new_id
from models.items import (
    CompactionItem,
    CustomToolCallItem,
    InputItem,
    McpApprovalRequestItem,
    McpCallItem,
    MessageItem,
    OutputFunctionCall,
    OutputItem,
    OutputMessage,
    OutputText,
    ReasoningItem,
    ReasoningText,
    Refusal,
)
from models.mcp import McpFunction
from models.responses import Response
from models.search import Source
from web_search.citations import citation_annotations

ChatMessage = dict[str, Any]
REASONING_KEYS = ("reasoning_content", "reasoning")
"""Where backends put a message's reasoning: vLLM, SGLang and DeepSeek's use the first,
Ollama and some routers the second."""

_input_item = TypeAdapter(InputItem)


def parse_items(raw_items: list[dict[str, Any]]) -> list[Any]:
    return [_input_item.validate_python(raw) for raw in raw_items]


# ---- Responses items -> chat messages -------------------------------------------------------


NOT_RUN = "The call was not run: the user did not approve it."


def items_to_messages(
    items: list[Any],
    table: ToolTable,
    tool_results: Mapping[str, str] | None = None,
    *,
    compacted: Callable[[CompactionItem], list[ChatMessage]] | None = None,
) -> list[ChatMessage]:
    """Consecutive tool calls (and the assistant text and reasoning before them) share one
    message. `tool_results`: what calls run by this response returned, by chat tool-call id;
    an approval request in `items` is followed by its call's result (or by "not run").
    `compacted`: the messages a compaction item stands for (none, without it)."""
    results = tool_results or {}
    messages: list[ChatMessage] = []
    reasoning = ""
    hosted_calls: set[str] = set()
    """Calls this server ran (a `shell_call` in a container): their output items are theirs."""
    for item in items:
        match item.type:
            case "message":
                messages.append(_message(item))
            case "function_call":
                _append_tool_call(messages, item.call_id, table.chat_name(item.name, item.namespace), item.arguments)
            case "custom_tool_call":
                _append_tool_call(
                    messages,
                    item.call_id,
                    table.chat_name(item.name, item.namespace),
                    json.dumps({CUSTOM_INPUT: item.input}),
                )
            case "function_call_output" | "custom_tool_call_output":
                messages.append(_tool_message(item.call_id, item.output_text()))
            case "mcp_call":
                _append_tool_call(messages, item.chat_call_id, item.name, item.arguments)
                messages.append(_tool_message(item.chat_call_id, item.result_text()))
            case "mcp_approval_request":
                _append_tool_call(messages, item.id, item.name, item.arguments)
                messages.append(_tool_message(item.id, results.get(item.id, NOT_RUN)))
            case "reasoning":
                reasoning += item.text()
                continue
            case "compaction":
                messages.extend(compacted(item) if compacted is not None else [])
                reasoning = ""
                continue
            case _ if is_client_call(item):
                typed = CLIENT_BY_ITEM_TYPE[item.type]
                _append_tool_call(messages, item.call_id, table.typed_name(item.type), typed.arguments_of(item))
            case kind if kind in CLIENT_BY_OUTPUT_TYPE and item.call_id not in hosted_calls:
                messages.append(_tool_message(item.call_id, CLIENT_BY_OUTPUT_TYPE[kind].result_of(item)))
            case kind if kind in HOSTED_ITEM_TYPES or kind in CLIENT_BY_OUTPUT_TYPE:
                hosted_calls.add(getattr(item, "call_id", item.id))
                continue  # the model's call and its result come back through `tool_results`
            case (
                "mcp_list_tools"
                | "mcp_approval_response"
                | "tool_search_call"
                | "tool_search_output"
                | "compaction_trigger"
            ):
                continue  # nothing a chat-completions backend takes; approvals act through `tool_results`
            case other:
                raise ValueError(f"item type {other!r} cannot be sent to a chat-completions backend")
        if reasoning and messages[-1]["role"] == "assistant":
            messages[-1]["reasoning_content"] = reasoning
        reasoning = ""
    return messages


def tool_messages(tool_results: Mapping[str, str]) -> list[ChatMessage]:
    return [_tool_message(call_id, text) for call_id, text in tool_results.items()]


def _tool_message(call_id: str, text: str) -> ChatMessage:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _message(item: MessageItem) -> ChatMessage:
    role = "system" if item.role == "developer" else item.role
    parts: list[Any] = item.content_parts()
    if all(part.type in ("input_text", "output_text", "refusal") for part in parts):
        return {"role": role, "content": "".join(_part_text(part) for part in parts)}
    return {"role": role, "content": [_chat_part(part) for part in parts]}


def _part_text(part: Any) -> str:
    text = part.refusal if part.type == "refusal" else part.text
    return str(text)


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
    response: Response,
    context: list[ChatMessage],
    base_url: str | None,
    table: ToolTable,
    *,
    send_reasoning: bool = False,
) -> dict[str, Any]:
    """The body of `POST /chat/completions` for one inference call (`base_url` None: without
    `max_output_tokens`, whose name depends on the backend)."""
    messages = [compaction.sendable(message if send_reasoning else _without_reasoning(message)) for message in context]
    if response.instructions:
        messages = [{"role": "system", "content": response.instructions}, *messages]
    request: dict[str, Any] = {"model": response.model, "messages": messages}
    tools = table.chat_tools()
    if tools:
        request["tools"] = tools
        request["tool_choice"] = _tool_choice(response.tool_choice, table)
        request["parallel_tool_calls"] = response.parallel_tool_calls
    for name in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
        if getattr(response, name) is not None:
            request[name] = getattr(response, name)
    if response.top_logprobs or "message.output_text.logprobs" in response.include:
        request["logprobs"] = True
        if response.top_logprobs:
            request["top_logprobs"] = response.top_logprobs
    if base_url is not None:
        request.update(max_tokens_field(response, base_url))
    if response.reasoning.effort is not None:
        request["reasoning_effort"] = response.reasoning.effort
    response_format = _response_format(response)
    if response_format is not None:
        request["response_format"] = response_format
    return request


def _without_reasoning(message: ChatMessage) -> ChatMessage:
    if not any(key in message for key in REASONING_KEYS):
        return message
    return {key: value for key, value in message.items() if key not in REASONING_KEYS}


def _tool_choice(choice: Any, table: ToolTable) -> Any:
    if isinstance(choice, str):
        return choice
    if choice.type == "mcp":
        names = [
            function.function_name
            for function in table.mcp.values()
            if function.server_label == choice.server_label and choice.name in (None, function.tool_name)
        ]
        return {"type": "function", "function": {"name": names[0]}} if len(names) == 1 else "required"
    return {"type": "function", "function": {"name": table.chat_name(choice.name, choice.namespace)}}


def max_tokens_field(response: Response, base_url: str) -> dict[str, int]:
    """`max_output_tokens` under the name the backend at `base_url` knows, when set."""
    if response.max_output_tokens is None:
        return {}
    return {max_tokens_parameter(base_url): response.max_output_tokens}


def max_tokens_parameter(base_url: str) -> str:
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


def reasoning_of(message: ChatMessage) -> str:
    return next((message[key] for key in REASONING_KEYS if isinstance(message.get(key), str)), "")


def assistant_to_output(
    message: ChatMessage,
    table: ToolTable,
    logprobs: list[dict[str, Any]] | None = None,
    sources: list[Source] | None = None,
) -> list[OutputItem]:
    """Output items of a reply. A call of an MCP tool becomes an `mcp_call` to run, or an
    `mcp_approval_request`; its chat tool-call id becomes the item's id (so it is mutated in
    `message`), which ties the result to the call in the chat context."""
    output: list[OutputItem] = []
    reasoning = reasoning_of(message)
    if reasoning:
        output.append(ReasoningItem(id=new_id("rs"), content=[ReasoningText(text=reasoning)]))
    parts: list[Any] = []
    if message.get("content"):
        parts.append(
            OutputText(
                type="output_text",
                text=message["content"],
                logprobs=logprobs or [],
                annotations=citation_annotations(message["content"], sources or []),
            )
        )
    if message.get("refusal"):
        parts.append(Refusal(type="refusal", refusal=message["refusal"]))
    if parts:
        output.append(OutputMessage(id=new_id("msg"), content=parts))
    for call in message.get("tool_calls") or []:
        function = call["function"]
        item = call_item(table, function["name"], function.get("arguments") or "{}", call_id=call["id"])
        if isinstance(item, (McpCallItem, McpApprovalRequestItem)) or is_hosted_call(item):
            call["id"] = item.id  # a call this server runs: its item's id is the call's
        output.append(item)
    return output


def call_item(
    table: ToolTable, chat_name: str, arguments: str, *, call_id: str | None = None, item_id: str | None = None
) -> OutputItem:
    """The item a model's call of `chat_name` becomes."""
    hosted = table.hosted.get(chat_name)
    if hosted is not None:
        item: OutputItem = hosted.new_item(arguments, table.requested[chat_name], item_id)
        return item
    typed = table.typed.get(chat_name)
    if typed is not None:
        made: OutputItem = typed.new_item(arguments, call_id or new_id("call"), item_id)
        return made
    mcp = table.mcp.get(chat_name)
    if mcp is not None:
        return mcp_item(mcp, arguments, item_id)
    client = table.client.get(chat_name)
    call_id = call_id or new_id("call")
    if client is not None and client.kind == "custom":
        return CustomToolCallItem(
            id=item_id or new_id("ctc"),
            call_id=call_id,
            name=client.name,
            input=custom_input(arguments),
            namespace=client.namespace,
        )
    return OutputFunctionCall(
        id=item_id or new_id("fc"),
        call_id=call_id,
        name=client.name if client else chat_name,
        arguments=arguments,
        namespace=client.namespace if client else None,
    )


def custom_input(arguments: str) -> str:
    """A custom tool's free text, from the one string argument the model was given for it
    (or the whole arguments text, when the model sent something else)."""
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return arguments
    value = parsed.get(CUSTOM_INPUT) if isinstance(parsed, dict) else None
    return value if isinstance(value, str) else arguments


def mcp_item(function: McpFunction, arguments: str, item_id: str | None = None) -> McpCallItem | McpApprovalRequestItem:
    """The item of a model's call of an MCP tool: a request for approval, or a call to run."""
    if function.requires_approval:
        return McpApprovalRequestItem(
            id=item_id or new_id("mcpr"),
            server_label=function.server_label,
            name=function.tool_name,
            arguments=arguments,
        )
    return McpCallItem(
        id=item_id or new_id("mcp"),
        server_label=function.server_label,
        name=function.tool_name,
        arguments=arguments,
        status="in_progress",
    )


def assistant_message(message: ChatMessage) -> ChatMessage:
    """The reply as it is kept in the chat context (only what a follow-up call needs)."""
    kept: ChatMessage = {"role": "assistant", "content": message.get("content")}
    reasoning = reasoning_of(message)
    if reasoning:
        kept["reasoning_content"] = reasoning
    if message.get("tool_calls"):
        kept["tool_calls"] = [
            {"id": call["id"], "type": "function", "function": call["function"]} for call in message["tool_calls"]
        ]
    return kept
