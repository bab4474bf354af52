"""Pure: the state of the current turn -> the next step, as a typed result (no flags).

A turn is one inference call and what follows from it: MCP calls to run, approvals to wait
for, then another inference call with their results, or the end of the response.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from models.client_tools import is_client_call
from models.hosted_tools import HOSTED_ITEM_TYPES, is_hosted_call
from models.items import McpApprovalRequestItem


@dataclass(frozen=True)
class Finish:
    """The response ends here; `trigger` is the machine's, `incomplete_reason` when truncated."""

    trigger: Literal["complete", "truncate", "steer"]
    incomplete_reason: Literal["max_output_tokens", "content_filter", "steered"] | None = None
    type: Literal["finish"] = "finish"


@dataclass(frozen=True)
class RunTools:
    """Run these calls (MCP tools, web searches; by output index)."""

    indexes: tuple[int, ...]
    type: Literal["run_tools"] = "run_tools"


@dataclass(frozen=True)
class AwaitApproval:
    """Wait (a background response) for a decision on each of these requests."""

    requests: tuple[McpApprovalRequestItem, ...]
    type: Literal["await_approval"] = "await_approval"


@dataclass(frozen=True)
class Infer:
    """Tools ran or were refused: show the model their results."""

    type: Literal["infer"] = "infer"


NextStep = Finish | RunTools | AwaitApproval | Infer


@dataclass(frozen=True)
class TurnPosition:
    """Where the loop is when it asks the model."""

    turn: int
    output_offset: int
    """The output index of the call's first item."""
    compact: bool = False
    from_start: bool = True
    just_compacted: bool = False


SERVER_CALLS = ("mcp_call", *HOSTED_ITEM_TYPES)
"""The types of calls this server runs for the model (an MCP tool's, a hosted tool's): a
`shell_call` is one only in a container (`is_server_call`)."""


def is_server_call(item: Any) -> bool:
    return item.type == "mcp_call" or is_hosted_call(item)


def next_step(
    output: Sequence[Any],
    turn_start: int,
    finish_reason: str,
    decided: Collection[str],
    *,
    can_wait: bool,
    steered: bool = False,
) -> NextStep:
    """`output[turn_start:]` is this turn's; `decided` the approval requests answered so far;
    `can_wait`: the response may wait for approvals (background) instead of ending with them;
    `steered`: input was queued for it, so it stops at the next safe boundary (the results of
    its tools are in, the next turn has not begun) and a successor goes on from there."""
    match finish_reason:
        case "length":
            return Finish(trigger="truncate", incomplete_reason="max_output_tokens")
        case "content_filter":
            return Finish(trigger="truncate", incomplete_reason="content_filter")
    turn = list(enumerate(output))[turn_start:]
    unrun = tuple(index for index, item in turn if is_server_call(item) and not item.has_run)
    if unrun:
        return RunTools(unrun)
    if any(item.type == "function_call" or is_client_call(item) for _, item in turn):
        return Finish(trigger="complete")  # function calls are the client's to run
    pending = tuple(item for _, item in turn if item.type == "mcp_approval_request" and item.id not in decided)
    if pending:
        return AwaitApproval(pending) if can_wait else Finish(trigger="complete")
    answered = any(item.type == "mcp_approval_request" for _, item in turn)
    if answered or any(is_server_call(item) for _, item in turn):
        return Finish(trigger="steer", incomplete_reason="steered") if steered else Infer()
    return Finish(trigger="complete")


def within_max_tool_calls(
    output: Sequence[Any], indexes: Sequence[int], max_tool_calls: int | None
) -> tuple[list[int], list[int]]:
    """The calls at `indexes` split into those `max_tool_calls` lets run (counting the calls
    the response has run already) and those it does not."""
    if max_tool_calls is None:
        return list(indexes), []
    run_before = sum(1 for item in output if is_server_call(item) and item.status in ("completed", "failed"))
    allowed = max(0, max_tool_calls - run_before)
    return list(indexes[:allowed]), list(indexes[allowed:])
