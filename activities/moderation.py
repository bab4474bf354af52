"""The input check of a turn (the guardrail seam's input side: `guardrails/`).

What is new to the model in the turn is classified: the response's input items on its first
turn, the results of the tools that ran since the last one. The check retries within the
plan's budget while the moderation backend cannot answer, and then returns the failure: the
workflow decides (fail closed or open), so the decision is in history, not in a retry.
"""

from __future__ import annotations

from temporalio import activity

from guardrails.moderator import Moderator, Subject
from guardrails.subjects import input_subjects, tool_subjects
from models import activity_names
from models.activity_io import ModerateInputRequest, ModerateInputResult
from store.repository import ResponseRepository


class ModerationActivities:
    def __init__(self, repository: ResponseRepository, moderator: Moderator) -> None:
        self.repository = repository
        self.moderator = moderator

    @activity.defn(name=activity_names.MODERATE_INPUT)
    async def moderate_input(self, request: ModerateInputRequest) -> ModerateInputResult:
        subjects: list[Subject] = []
        if request.first:
            subjects.extend(input_subjects(await self.repository.input_items_of(request.response_id)))
        if request.tool_results:
            texts = await self.repository.parked.tool_texts(request.response_id, request.tool_results)
            subjects.extend(tool_subjects(texts))
        plan = request.plan
        result = await self.moderator.check(
            plan.model, subjects, request.project, budget_seconds=plan.budget_seconds, waiter=request.response_id
        )
        return ModerateInputResult(result=result)
