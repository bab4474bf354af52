"""A turn's output checked whole: non-streamed output before it is kept, and streamed output
under a `score` policy once the reply is complete (an `output: block` stream is checked window
by window instead: `held_output.py`). A blocked reply keeps none of its text."""

from __future__ import annotations

from typing import Any

from guardrails.moderator import Moderator
from guardrails.subjects import output_subject, withheld
from models.activity_io import InferenceInput, InferenceResult
from models.moderation import ModerationPlan, blocks


async def checked_whole(
    moderator: Moderator,
    plan: ModerationPlan,
    request: InferenceInput,
    result: InferenceResult,
    message: dict[str, Any],
) -> tuple[InferenceResult, dict[str, Any]]:
    """The result with what the check found, and the assistant message the turn's context
    keeps (empty when the reply was blocked)."""
    found = await moderator.check(
        plan.model,
        [output_subject(result.output)],
        request.project,
        budget_seconds=plan.budget_seconds,
        waiter=request.response.id,
    )
    if not blocks(plan.output, found, fail_open=plan.fail_open):
        return result.model_copy(update={"moderation": found}), message
    blocked = result.model_copy(update={"moderation": found, "blocked": True, "output": withheld(result.output)})
    return blocked, {"role": "assistant", "content": ""}
