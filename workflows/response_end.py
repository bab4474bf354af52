"""A response's end as it is written (`FinalizeInput`), from what the workflow holds or from
one turn's call and its answer. Pure: no I/O, no Temporal calls, so an activity may run it too.

The workflow writes a response's end with a local activity once it has decided the response
ends (`ResponseWorkflow._finalize`). For the commonest response, one model call whose answer
is the whole response, that step needs nothing the call does not already hold: a first turn
with no MCP server, no moderation plan and nothing carried over, whose answer has no call for
this server to run. Such a turn's call is asked to write the end itself
(`InferenceInput.may_end`, `may_end_in_the_call`) when its answer ends the response
(`call_end`, by the same `workflows/turn.py` decision the workflow then makes from the same
answer), and says it did (`InferenceResult.ended`). The workflow then decides as it always
does and finds the end written: one local activity and one workflow activation fewer per
response, and the end reaches the client as soon as the answer does. Both ways build the
ended response with `ended`, so they write the same response.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models.activity_io import FinalizeInput, InferenceInput, InferenceResult
    from models.history_budget import ToolResult
    from models.mcp import McpListing
    from models.moderation import SafetyLimit
    from models.responses import IncompleteDetails, Response, Usage
    from models.steering import required_input
    from workflows.moderation import concluded
    from workflows.response_state import ResponseState
    from workflows.steering import successor_id
    from workflows.turn import Finish, TurnPosition, next_step

ENDED_BY = {"complete": "completed", "truncate": "incomplete"}
"""The `workflows/turn.py` finishes a call may write, and the status each ends with."""


def ended(snapshot: Response, at: int) -> Response:
    """The response as it ends, `snapshot` holding its final status, at `at` (epoch seconds):
    its moderation concluded, and no item left in progress when it was cancelled or failed."""
    final = concluded(snapshot).model_copy(update={"completed_at": at if snapshot.status == "completed" else None})
    if final.status not in ("cancelled", "failed"):
        return final
    output = [
        item.model_copy(update={"status": "incomplete"})
        if getattr(item, "status", None) in ("in_progress", "calling")
        else item
        for item in final.output
    ]
    return final.model_copy(update={"output": output})


def end_input(
    final: Response,
    *,
    emit_events: bool,
    project: str,
    tool_results: dict[str, ToolResult],
    listings: list[McpListing],
    parked: dict[str, str],
    safety: SafetyLimit | None,
    settled_output: Sequence[object],
    decided: Collection[str],
) -> FinalizeInput:
    """What `finalize_response` writes: the ended response and what its chain keeps; the
    steers it holds settle against `settled_output` (the output before `ended`)."""
    return FinalizeInput(
        response=final,
        emit_events=emit_events,
        tool_results=tool_results,
        listings=listings,
        parked=parked,
        project=project,
        safety=safety if final.moderation is not None else None,
        successor_id=successor_id(final.id),
        required_input=required_input(settled_output, decided=decided),
    )


def may_end_in_the_call(state: ResponseState, at: TurnPosition) -> bool:
    """Whether this turn's call may write the response's end: a first turn with nothing
    before it that the end would need (no MCP listing, approval, parked item or tool result;
    no moderation plan, whose verdicts the workflow concludes), in the foreground (a
    background response's end also starts its webhooks' wait), answering rather than
    compacting."""
    response = state.response
    return (
        at.turn == 0
        and not (at.compact or at.just_compacted or response.compact_only or response.background)
        and response.moderation_plan is None
        and not (state.servers or state.listings or state.parked or state.tool_results)
        and not (state.decisions or state.answered)
    )


def call_end(call: InferenceInput, result: InferenceResult, at: int) -> FinalizeInput | None:
    """The end a call asked to (`may_end`) writes, when its answer ends the response: the same
    `FinalizeInput` the workflow's own last step would write after this answer; None when the
    response goes on (a tool for this server to run) or ends some other way."""
    if not call.may_end or result.compaction_due or result.moderation is not None or result.blocked:
        return None
    before = call.response
    output = [*before.output, *result.output]
    step = next_step(output, len(before.output), result.finish_reason, (), can_wait=before.background)
    if not isinstance(step, Finish) or step.trigger not in ENDED_BY:
        return None
    update = {"output": output, "usage": (before.usage or Usage()) + result.usage, "status": ENDED_BY[step.trigger]}
    if step.incomplete_reason is not None:
        update["incomplete_details"] = IncompleteDetails(reason=step.incomplete_reason)
    snapshot = before.model_copy(update=update)
    return end_input(
        ended(snapshot, at),
        emit_events=call.emit_events,
        project=call.project,
        tool_results={},
        listings=[],
        parked={item_id: item_id for item_id in result.parked},
        safety=None,
        settled_output=output,
        decided=(),
    )
