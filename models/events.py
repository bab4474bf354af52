"""Streaming events, in OpenAI's shapes. `sequence_number` is added by the event log."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from models.code_items import CodeInterpreterCallItem, ShellCallItem, ShellCallOutputItem, ShellCommandOutput
from models.items import (
    CompactionItem,
    FileSearchCallItem,
    McpApprovalRequestItem,
    McpCallItem,
    McpListToolsItem,
    OutputContentPart,
    OutputItem,
    ReasoningText,
    WebSearchCallItem,
)
from models.responses import WIRE, Response


class StreamEvent(BaseModel):
    def wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, context=WIRE)


class LifecycleEvent(StreamEvent):
    type: Literal[
        "response.created",
        "response.queued",
        "response.in_progress",
        "response.completed",
        "response.incomplete",
        "response.failed",
    ]
    response: Response


class OutputItemEvent(StreamEvent):
    type: Literal["response.output_item.added", "response.output_item.done"]
    output_index: int
    item: OutputItem


class ContentPartEvent(StreamEvent):
    type: Literal["response.content_part.added", "response.content_part.done"]
    item_id: str
    output_index: int
    content_index: int
    part: OutputContentPart | ReasoningText


class TextDeltaEvent(StreamEvent):
    """A piece of a message's text, or (`response.reasoning_text.delta`) of reasoning."""

    type: Literal["response.output_text.delta", "response.reasoning_text.delta"] = "response.output_text.delta"
    item_id: str
    output_index: int
    content_index: int
    delta: str
    logprobs: list[Any] = Field(default_factory=list)

    def wire(self) -> dict[str, Any]:
        # One per chunk of a reply: built directly, as `model_dump` would (a test checks).
        return {
            "type": self.type,
            "item_id": self.item_id,
            "output_index": self.output_index,
            "content_index": self.content_index,
            "delta": self.delta,
            "logprobs": self.logprobs,
        }


class TextDoneEvent(StreamEvent):
    type: Literal["response.output_text.done", "response.reasoning_text.done"] = "response.output_text.done"
    item_id: str
    output_index: int
    content_index: int
    text: str
    logprobs: list[Any] = Field(default_factory=list)


class CustomInputDeltaEvent(StreamEvent):
    type: Literal["response.custom_tool_call_input.delta"] = "response.custom_tool_call_input.delta"
    item_id: str
    output_index: int
    delta: str


class CustomInputDoneEvent(StreamEvent):
    type: Literal["response.custom_tool_call_input.done"] = "response.custom_tool_call_input.done"
    item_id: str
    output_index: int
    input: str


class ArgumentsDeltaEvent(StreamEvent):
    """A piece of a call's arguments: a function call's, or an MCP call's."""

    type: Literal["response.function_call_arguments.delta", "response.mcp_call_arguments.delta"] = (
        "response.function_call_arguments.delta"
    )
    item_id: str
    output_index: int
    delta: str


class ArgumentsDoneEvent(StreamEvent):
    type: Literal["response.function_call_arguments.done"] = "response.function_call_arguments.done"
    item_id: str
    output_index: int
    name: str
    arguments: str


class McpProgressEvent(StreamEvent):
    """A step of an MCP item: its listing or its call started, finished or failed."""

    type: Literal[
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.mcp_call.in_progress",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
    ]
    item_id: str
    output_index: int


class McpArgumentsDoneEvent(StreamEvent):
    type: Literal["response.mcp_call_arguments.done"] = "response.mcp_call_arguments.done"
    item_id: str
    output_index: int
    arguments: str


class WebSearchProgressEvent(StreamEvent):
    type: Literal[
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
        "response.web_search_call.completed",
    ]
    item_id: str
    output_index: int


class FileSearchProgressEvent(StreamEvent):
    type: Literal[
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.file_search_call.completed",
    ]
    item_id: str
    output_index: int


class CodeInterpreterProgressEvent(StreamEvent):
    type: Literal[
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
    ]
    item_id: str
    output_index: int


class CodeDeltaEvent(StreamEvent):
    type: Literal["response.code_interpreter_call_code.delta"] = "response.code_interpreter_call_code.delta"
    item_id: str
    output_index: int
    delta: str


class CodeDoneEvent(StreamEvent):
    type: Literal["response.code_interpreter_call_code.done"] = "response.code_interpreter_call_code.done"
    item_id: str
    output_index: int
    code: str


class ShellCommandEvent(StreamEvent):
    type: Literal["response.shell_call_command.added", "response.shell_call_command.done"]
    output_index: int
    command_index: int
    command: str


class ShellOutputDelta(BaseModel):
    stdout: str | None = None
    stderr: str | None = None


class ShellOutputDeltaEvent(StreamEvent):
    type: Literal["response.shell_call_output_content.delta"] = "response.shell_call_output_content.delta"
    item_id: str
    output_index: int
    command_index: int
    delta: ShellOutputDelta


class ShellOutputDoneEvent(StreamEvent):
    type: Literal["response.shell_call_output_content.done"] = "response.shell_call_output_content.done"
    item_id: str
    output_index: int
    command_index: int
    output: list[ShellCommandOutput]


class CompactionProgressEvent(StreamEvent):
    type: Literal["response.compaction.compacting"] = "response.compaction.compacting"
    item_id: str
    output_index: int


class ErrorEvent(StreamEvent):
    """A stream that fails outside a response. OpenAI's SDK reads the error's fields at the
    top level, the OpenResponses schema inside `error`: both are sent."""

    type: Literal["error"] = "error"
    code: str | None = None
    message: str
    param: str | None = None

    def wire(self) -> dict[str, Any]:
        fields = {"type": "server_error", "code": self.code, "message": self.message, "param": self.param}
        return super().wire() | {"error": fields}


TERMINAL_TYPE_BY_STATUS = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
    "cancelled": "response.failed",
}


def opening_events(response: Response) -> list[dict[str, Any]]:
    """The first events of a response's log, written with the response itself."""
    follow: Literal["response.queued", "response.in_progress"] = (
        "response.queued" if response.status == "queued" else "response.in_progress"
    )
    return [
        LifecycleEvent(type="response.created", response=response).wire(),
        LifecycleEvent(type=follow, response=response).wire(),
    ]


# ---- the events of MCP items ----------------------------------------------------------------
# Written by whichever activity does the step, once each (`EventLog.append_once`), so a
# retried activity never announces a step twice.


def list_tools_opening(item: McpListToolsItem, index: int) -> list[StreamEvent]:
    return [
        OutputItemEvent(
            type="response.output_item.added",
            output_index=index,
            item=item.model_copy(update={"tools": [], "error": None}),
        ),
        McpProgressEvent(type="response.mcp_list_tools.in_progress", item_id=item.id, output_index=index),
    ]


def list_tools_closing(item: McpListToolsItem, index: int) -> list[StreamEvent]:
    outcome = "failed" if item.error is not None else "completed"
    return [
        McpProgressEvent.model_validate(
            {"type": f"response.mcp_list_tools.{outcome}", "item_id": item.id, "output_index": index}
        ),
        OutputItemEvent(type="response.output_item.done", output_index=index, item=item),
    ]


def mcp_call_opening(call: McpCallItem, index: int) -> list[StreamEvent]:
    started = call.model_copy(update={"arguments": "", "output": None, "error": None, "status": "in_progress"})
    events: list[StreamEvent] = [OutputItemEvent(type="response.output_item.added", output_index=index, item=started)]
    if call.arguments:
        events.append(
            ArgumentsDeltaEvent(
                type="response.mcp_call_arguments.delta", item_id=call.id, output_index=index, delta=call.arguments
            )
        )
    events.append(McpArgumentsDoneEvent(item_id=call.id, output_index=index, arguments=call.arguments))
    events.append(McpProgressEvent(type="response.mcp_call.in_progress", item_id=call.id, output_index=index))
    return events


def mcp_call_closing(call: McpCallItem, index: int) -> list[StreamEvent]:
    outcome = "failed" if call.status == "failed" else "completed"
    return [
        McpProgressEvent.model_validate(
            {"type": f"response.mcp_call.{outcome}", "item_id": call.id, "output_index": index}
        ),
        OutputItemEvent(type="response.output_item.done", output_index=index, item=call),
    ]


def approval_request_events(request: McpApprovalRequestItem, index: int) -> list[StreamEvent]:
    return [
        OutputItemEvent(type="response.output_item.added", output_index=index, item=request),
        OutputItemEvent(type="response.output_item.done", output_index=index, item=request),
    ]


def compaction_events(item: CompactionItem, index: int) -> list[StreamEvent]:
    """A compaction item, announced once its summary is made (a retried attempt announces
    nothing twice)."""
    assert item.id is not None
    return [
        OutputItemEvent(
            type="response.output_item.added",
            output_index=index,
            item=item.model_copy(update={"encrypted_content": ""}),
        ),
        CompactionProgressEvent(item_id=item.id, output_index=index),
        OutputItemEvent(type="response.output_item.done", output_index=index, item=item),
    ]


def search_opening(call: WebSearchCallItem | FileSearchCallItem, index: int) -> list[StreamEvent]:
    """A web or file search call's first events: its item added (without what it found), in
    progress, searching."""
    started: WebSearchCallItem | FileSearchCallItem
    if isinstance(call, WebSearchCallItem):
        started = call.model_copy(
            update={"status": "in_progress", "action": call.action.model_copy(update={"sources": None})}
        )
    else:
        started = call.model_copy(update={"status": "in_progress", "results": None})
    return [
        OutputItemEvent(type="response.output_item.added", output_index=index, item=started),
        _search_progress(call, "in_progress", index),
        _search_progress(call, "searching", index),
    ]


def _search_progress(call: WebSearchCallItem | FileSearchCallItem, step: str, index: int) -> StreamEvent:
    progress = WebSearchProgressEvent if isinstance(call, WebSearchCallItem) else FileSearchProgressEvent
    return progress.model_validate({"type": f"response.{call.type}.{step}", "item_id": call.id, "output_index": index})


def search_closing(call: WebSearchCallItem | FileSearchCallItem, index: int) -> list[StreamEvent]:
    """Its last: completed (unless it failed), and its item done."""
    events: list[StreamEvent] = []
    if call.status == "completed":
        events.append(_search_progress(call, "completed", index))
    events.append(OutputItemEvent(type="response.output_item.done", output_index=index, item=call))
    return events


def code_opening(call: CodeInterpreterCallItem, index: int) -> list[StreamEvent]:
    """A code interpreter call's first events: its item added (without outputs), in progress,
    its code (whole, in one delta: the model's arguments were complete before it ran), and
    interpreting."""
    started = call.model_copy(update={"status": "in_progress", "outputs": None})
    code = call.code or ""
    return [
        OutputItemEvent(type="response.output_item.added", output_index=index, item=started),
        _code_progress(call, "in_progress", index),
        CodeDeltaEvent(item_id=call.id, output_index=index, delta=code),
        CodeDoneEvent(item_id=call.id, output_index=index, code=code),
        _code_progress(call, "interpreting", index),
    ]


def _code_progress(call: CodeInterpreterCallItem, step: str, index: int) -> StreamEvent:
    return CodeInterpreterProgressEvent.model_validate(
        {"type": f"response.code_interpreter_call.{step}", "item_id": call.id, "output_index": index}
    )


def code_closing(call: CodeInterpreterCallItem, index: int) -> list[StreamEvent]:
    """Its last: completed (unless it failed or was cut short), and its item done."""
    events: list[StreamEvent] = []
    if call.status == "completed":
        events.append(_code_progress(call, "completed", index))
    events.append(OutputItemEvent(type="response.output_item.done", output_index=index, item=call))
    return events


def shell_call_events(call: ShellCallItem, index: int) -> list[StreamEvent]:
    """A shell call, whole: its commands were complete before it ran."""
    started = call.model_copy(update={"status": "in_progress"})
    events: list[StreamEvent] = [OutputItemEvent(type="response.output_item.added", output_index=index, item=started)]
    for number, command in enumerate(call.action.commands):
        for step in ("added", "done"):
            events.append(
                ShellCommandEvent.model_validate(
                    {
                        "type": f"response.shell_call_command.{step}",
                        "output_index": index,
                        "command_index": number,
                        "command": command,
                    }
                )
            )
    events.append(OutputItemEvent(type="response.output_item.done", output_index=index, item=call))
    return events


def shell_output_opening(output: ShellCallOutputItem, index: int) -> list[StreamEvent]:
    started = output.model_copy(update={"status": "in_progress", "output": []})
    return [OutputItemEvent(type="response.output_item.added", output_index=index, item=started)]


def shell_output_closing(output: ShellCallOutputItem, index: int) -> list[StreamEvent]:
    """Each command's output whole, and the item done."""
    events: list[StreamEvent] = [
        ShellOutputDoneEvent(item_id=output.id, output_index=index, command_index=number, output=[each])
        for number, each in enumerate(output.output)
    ]
    events.append(OutputItemEvent(type="response.output_item.done", output_index=index, item=output))
    return events


def hosted_closing(call: Any, index: int) -> list[StreamEvent]:
    """A hosted tool's call's last events, whichever tool's. A code or shell call's opening
    comes too: one that ended before it ran had none (the log keeps each step's event once, so
    one that had keeps it as it was)."""
    if isinstance(call, CodeInterpreterCallItem):
        return code_opening(call, index) + code_closing(call, index)
    if isinstance(call, ShellCallItem):
        return shell_call_events(call, index)
    return search_closing(call, index)
