"""The first turn's model call, begun while the response's workflow is being started.

A model call changes nothing in the world, so nothing requires it to wait until the workflow's
start is durable; only what a client is shown does (`response_service/starting.py`). The API begins the
first turn's call beside the start when the workflow's input alone fixes what it asks
(`workflows/turn_input.py`), and the workflow's own execution of that turn adopts it:

- with a worker in the API's process (`dev`), that execution joins the call through
  `activities/single_flight.py`, or takes its outcome when it ended first;
- without one (`serve`, the workflow on a worker elsewhere), the call claims the turn in the
  store (`store/turns.py`) and the worker's execution finds it claimed, waits until the result
  is recorded (woken by the store's wake-ups) and returns it as its own.

The model is asked once either way. A moderation plan with an input side checks the input
first, as the workflow does, and the call waits for the verdict; the workflow's own check takes
that verdict rather than asking again (so only a worker in the same process begins such a
turn: elsewhere the check would be asked twice). A start that fails cancels both before the
response is removed.
"""

from __future__ import annotations

import asyncio
import typing

from activities.inference import InferenceActivities
from activities.moderation import ModerationActivities
from models.activity_io import InferenceResult, ModerateInputResult
from models.moderation import blocks
from workflows.turn_input import FirstTurn


class EarlyCalls:
    """Model calls and input checks lent to the API's runner: its in-process worker's
    (`worker_here`), or the API process's own."""

    def __init__(self, *, worker_here: bool = True) -> None:
        self.worker_here = worker_here
        """The workflows run in this process: their executions take the early outcomes here."""
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
            # Its outcome is never None (no check to block it); Future is invariant in its type.
            return typing.cast(
                "asyncio.Future[InferenceResult | None] | None", inference.begin(first.call, kept=self.worker_here)
            )
        if not self.worker_here:
            return None  # the worker's check could not take this one's verdict: it asks first
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
