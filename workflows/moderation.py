"""The response's moderation decisions (the guardrail seam's workflow side: `guardrails/`).

Before a turn's model call, `input_passes` checks what is new to the model (the input on the
first turn, tools' results on each after), as a local activity, and says whether the model may
be asked. A turn's output checks run in its model call (they stand between the stream and the
event log) and come back with its result: `output_checked` keeps what they found. A response
without a moderation plan runs none of this: no activity, no history event.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import ModerateInputRequest, ModerateInputResult
    from models.moderation import ModerationProgress, SideResult, blocks, merged_side
    from models.responses import IncompleteDetails, Response
    from models.workflow_io import RetryBudget
    from workflows.options import local_activity_options
    from workflows.response_state import ResponseState

CHECK_MARGIN_SECONDS = 30.0
"""A check retries within its plan's budget itself; its activity may take that and this."""


def _progress(response: Response) -> ModerationProgress:
    if response.moderation_progress is None:
        response.moderation_progress = ModerationProgress()
    return response.moderation_progress


def input_check(state: ResponseState, project: str, *, first: bool) -> ModerateInputRequest | None:
    """The check of what is new to the model in a turn; None when nothing needs one. Pure: the
    API asks it too, to check a first turn's input while the workflow starts
    (`workflows/turn_input.py`)."""
    response = state.response
    plan = response.moderation_plan
    if plan is None or plan.input is None or response.compact_only:
        return None
    first = first and (response.moderation_progress is None or response.moderation_progress.input is None)
    fresh = {call: result for call, result in state.tool_results.items() if call not in state.moderated_calls}
    if not first and not fresh:
        return None
    return ModerateInputRequest(response_id=response.id, project=project, plan=plan, first=first, tool_results=fresh)


async def input_passes(state: ResponseState, project: str, *, first: bool) -> bool:
    """Whether the model may be asked: the turn's new input passed its check, or needs none.
    A blocked input leaves the response to end `incomplete` / `content_filter`."""
    request = input_check(state, project, first=first)
    if request is None:
        return True
    plan, response, fresh = request.plan, state.response, request.tool_results
    checked: ModerateInputResult = await workflow.execute_local_activity(
        activity_names.MODERATE_INPUT,
        request,
        result_type=ModerateInputResult,
        **local_activity_options(
            RetryBudget(start_to_close_seconds=plan.budget_seconds + CHECK_MARGIN_SECONDS, maximum_attempts=3)
        ),
    )
    state.moderated_calls.update(fresh)
    progress = _progress(response)
    progress.input = merged_side(progress.input, checked.result)
    if blocks(plan.input, checked.result, fail_open=plan.fail_open):
        progress.input_blocked = True
        response.incomplete_details = IncompleteDetails(reason="content_filter")
        return False
    return True


def output_checked(response: Response, found: SideResult | None, blocked: bool) -> bool:
    """Keep what a turn's output checks found; whether they blocked it."""
    if found is not None:
        progress = _progress(response)
        progress.output = merged_side(progress.output, found)
    if blocked:
        response.incomplete_details = IncompleteDetails(reason="content_filter")
    return blocked


def concluded(response: Response) -> Response:
    """The response as it ends, with `moderation` set when it had a plan."""
    plan = response.moderation_plan
    if plan is None:
        return response
    progress = response.moderation_progress or ModerationProgress()
    return response.model_copy(update={"moderation": progress.concluded(plan)})
