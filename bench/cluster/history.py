"""What the bed logs, one JSON object a line, in the bed's own directory (never on a node's
disk): the client's operations and what it found of each at the end, the faults the nemesis
made, each tool call as the tools' server saw it, each webhook delivery as the receiver got it,
and each upstream request as the backend saw it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, Field


class Answer(BaseModel):
    """One HTTP exchange of an operation: which API node, what came back."""

    api: str
    call: str
    status: int | None = None
    """None: no answer (refused, reset or timed out)."""
    retry_after: str | None = None
    error: str = ""


class Operation(BaseModel):
    id: str
    kind: Literal["text", "stream", "moderated", "approval", "chain", "conversation", "command", "code", "steer"]
    start: float
    end: float = 0.0
    response_ids: list[str] = Field(default_factory=list)
    """Every response the operation was told was made (accepted), in order."""
    expected_text: str = ""
    """What the last response's output must be, once completed."""
    approved_key: str = ""
    """The destructive call's key, once the operation approved it."""
    answers: list[Answer] = Field(default_factory=list)
    conversation_id: str = ""
    """The conversation the operation made, if it made one."""
    steered_id: str = ""
    """The response the operation steered, if it sent a steer."""
    steer_accepted: bool = False
    """Whether the server said `response.steer.accepted`."""
    sequence_numbers: list[int] = Field(default_factory=list)
    """A streamed operation's events' sequence numbers, as they came, over every connection
    (the first and each resumed one)."""
    streamed_text: str = ""
    """The text of every `response.output_text.delta` a streamed operation got, joined."""
    stream_ended: bool = False
    """Whether a streamed operation got its response's last event."""
    outcome: Literal["done", "given_up", "refused", "unknown"] = "unknown"
    note: str = ""


class Final(BaseModel):
    """A response as read once every fault was healed."""

    response_id: str
    status: str | None
    """None: it never reached a terminal status within the final wait."""
    output_text: str = ""
    log_matches: bool | None = None
    """Whether the stored response equals its event log's last event (None: no log kept)."""
    log_gaps: bool = False
    """Whether the log's sequence numbers skip or repeat."""
    approval_requests: list[str] = Field(default_factory=list)
    tool_calls: list[str] = Field(default_factory=list)
    """The `mcp_call` items' status: "completed", "failed", "incomplete"..."""
    rejected_at_end: bool = False
    """Still waiting for approval once healed (its operation gave up first), and refused then."""
    command_outputs: list[str] = Field(default_factory=list)
    """The `shell_call_output` items' outcomes ("<status> exit 0: <stdout>", "<status> timeout
    : "...) and the `code_interpreter_call` items' logs ("<status> logs: <logs>")."""
    note: str = ""


class ConversationRead(BaseModel):
    """A conversation's items as read once every fault was healed, oldest first."""

    conversation_id: str
    operation_id: str
    items: list[str] = Field(default_factory=list)
    """Each item as "<role>: <text>"."""
    item_ids: list[str] = Field(default_factory=list)
    note: str = ""
    """Why its items could not be read, when they could not."""


class SteerRead(BaseModel):
    """What became of an accepted steer, as read once every fault was healed."""

    operation_id: str
    steered_id: str
    successors: list[str] = Field(default_factory=list)
    """The responses that continue the steered one (`GET /v1/responses?previous_response_id=`)."""
    statuses: list[str | None] = Field(default_factory=list)
    """Each successor's status once it ended (None: it never did, within the final wait)."""
    carrying: int = 0
    """How many successors took the steer as input."""
    note: str = ""


class Fault(BaseModel):
    kind: str
    targets: list[str]
    start: float
    end: float = 0.0
    detail: str = ""


class ToolCall(BaseModel):
    time: float
    tool: str
    arguments: dict[str, object]
    meta: dict[str, object]


class Delivery(BaseModel):
    """A webhook delivery, as the receiver got it."""

    time: float
    id: str
    """Its `webhook-id`: one event's every attempt carries the same."""
    type: str
    response_id: str


class UpstreamCall(BaseModel):
    """A model or moderation request, as the backend saw it arrive."""

    time: float
    model: str
    path: str


Record = TypeVar("Record", bound=BaseModel)


class Log:
    """An append-only file of one kind of record."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("a", buffering=1)

    def write(self, record: BaseModel) -> None:
        self._file.write(record.model_dump_json() + "\n")

    def close(self) -> None:
        self._file.close()


def read(path: Path, kind: type[Record]) -> list[Record]:
    """Every whole record of the file (a line cut off by a kill is skipped)."""
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(kind.model_validate(json.loads(line)))
        except ValueError:
            continue
    return records


def now() -> float:
    return time.time()
