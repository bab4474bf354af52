"""The first turn's model call, started while the response's workflow is being started.

A model call changes nothing in the world, so nothing requires it to wait until the workflow's
start is durable; only what a client is shown does (`api/routes.py` sends a stream's first
byte once the start is acknowledged). Where a worker runs in the API's process (`dev`), the
API starts the first turn's call beside the start when the workflow's input alone fixes what
it asks (`workflows/turn_input.py`). The workflow's own execution of
that turn joins it: on this worker through `activities/single_flight.py`, on another through
the turn's claim (`store/turns.py`: it waits for the result the early call records). The model
is asked once either way. A moderation plan with an input side checks the input first, as the
workflow does, and the call waits for that check's verdict; the workflow's own check takes
the verdict rather than asking again. A start that fails cancels both before the response is
removed.
"""

from __future__ import annotations

import asyncio

from activities.inference import InferenceActivities
from activities.moderation import ModerationActivities
from models.activity_io import InferenceResult, ModerateInputResult
from models.moderation import blocks
from workflows.turn_input import FirstTurn


class EarlyCalls:
    """The in-process worker's model calls and input checks, lent to the API's runner while
    the worker runs."""

    def __init__(self) -> None:
        self._inference: InferenceActivities | None = None
        self._moderation: ModerationActivities | None = None

    def serve(self, inference: InferenceActivities, moderation: ModerationActivities) -> None:
        self._inference, self._moderation = inference, moderation

    def withdraw(self) -> None:
        self._inference = self._moderation = None

    def begin(self, first: FirstTurn) -> asyncio.Future[InferenceResult | None] | None:
        """The first turn begun: its input checked (when its plan says) and then its call made,
        unless the check blocks it; None when no worker here makes calls now."""
        inference, moderation = self._inference, self._moderation
        if inference is None or moderation is None:
            return None
        if first.check is None:
            return inference.begin(first.call)
        return asyncio.ensure_future(self._checked_then_called(first, inference, moderation.begin(first.check)))

    @staticmethod
    async def _checked_then_called(
        first: FirstTurn, inference: InferenceActivities, checking: asyncio.Future[ModerateInputResult]
    ) -> InferenceResult | None:
        verdict, plan = await checking, first.check.plan if first.check else None
        if plan is not None and plan.input is not None and blocks(plan.input, verdict.result, fail_open=plan.fail_open):
            return None  # the model is not asked: the workflow ends the response blocked
        call = inference.begin(first.call)
        return await call if call is not None else None

    async def abandon(self, first: FirstTurn, began: asyncio.Future[InferenceResult | None]) -> None:
        """Stop what began for a workflow that never started, and wait until it has let its
        turn go."""
        began.cancel()
        await asyncio.wait({began})
        if self._inference is not None:
            self._inference.forget_early(first.call)
        if self._moderation is not None and first.check is not None:
            self._moderation.forget_early(first.check)
