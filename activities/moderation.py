"""The input check of a turn (the guardrail seam's input side: `guardrails/`).

What is new to the model in the turn is classified: the response's input items on its first
turn, the results of the tools that ran since the last one. The check retries within the
plan's budget while the moderation backend cannot answer, and then returns the failure: the
workflow decides (fail closed or open), so the decision is in history, not in a retry. A first
turn's check may have begun while the workflow started (`activities/early_calls.py`): the
workflow's execution takes its outcome rather than asking again.
"""

from __future__ import annotations

import asyncio

from temporalio import activity

from activities.single_flight import SingleFlight
from guardrails.moderator import Moderator, Subject
from guardrails.subjects import input_subjects, tool_subjects
from models import activity_names
from models.activity_io import ModerateInputRequest, ModerateInputResult
from store.parked import ParkedFields
from store.responses import Responses


class ModerationActivities:
    def __init__(self, *, responses: Responses, parked: ParkedFields, moderator: Moderator) -> None:
        self.responses = responses
        self.parked = parked
        self.moderator = moderator
        self.first_checks = SingleFlight()
        """First turns' input checks: begun while the workflow starts (`begin`), taken by its
        execution of the check."""

    @activity.defn(name=activity_names.MODERATE_INPUT)
    async def moderate_input(self, request: ModerateInputRequest) -> ModerateInputResult:
        if request.first:
            return await self.first_checks.run(request.response_id, lambda: self._check(request))
        return await self._check(request)

    def begin(self, request: ModerateInputRequest) -> asyncio.Future[ModerateInputResult]:
        """A first turn's input check, begun before its workflow asks for it
        (`activities/early_calls.py`); its outcome waits for the workflow's execution of it."""
        return self.first_checks.start(request.response_id, lambda: self._check(request), kept=True)

    def forget_early(self, request: ModerateInputRequest) -> None:
        """An early check whose workflow never started: nothing will come for its outcome."""
        self.first_checks.forget(request.response_id)

    async def _check(self, request: ModerateInputRequest) -> ModerateInputResult:
        subjects: list[Subject] = []
        if request.first:
            subjects.extend(input_subjects(await self.responses.input_items_of(request.response_id)))
        if request.tool_results:
            texts = await self.parked.tool_texts(request.response_id, request.tool_results)
            subjects.extend(tool_subjects(texts))
        plan = request.plan
        result = await self.moderator.check(
            plan.model, subjects, request.project, budget_seconds=plan.budget_seconds, waiter=request.response_id
        )
        return ModerateInputResult(result=result)
