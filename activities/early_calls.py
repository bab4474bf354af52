"""The first turn's model call, started while the response's workflow is being started.

A model call changes nothing in the world, so nothing requires it to wait until the workflow's
start is durable; only what a client is shown does (`api/routes.py` sends a stream's first
byte once the start is acknowledged). Where a worker runs in the API's process (`dev`), the
API starts the first turn's call beside the start when the workflow's input alone fixes what
it asks (`workflows/turn_input.py`). The workflow's own execution of
that turn joins it: on this worker through `activities/single_flight.py`, on another through
the turn's claim (`store/turns.py`: it waits for the result the early call records). The model
is asked once either way. A start that fails cancels the call before the response is removed.
"""

from __future__ import annotations

import asyncio

from activities.inference import InferenceActivities
from models.activity_io import InferenceInput, InferenceResult


class EarlyCalls:
    """The in-process worker's model calls, lent to the API's runner while the worker runs."""

    def __init__(self) -> None:
        self._inference: InferenceActivities | None = None

    def serve(self, inference: InferenceActivities) -> None:
        self._inference = inference

    def withdraw(self) -> None:
        self._inference = None

    def begin(self, request: InferenceInput) -> asyncio.Future[InferenceResult] | None:
        """The call started (or joined), or None when no worker here makes calls now."""
        return self._inference.begin(request) if self._inference is not None else None

    async def abandon(self, request: InferenceInput, call: asyncio.Future[InferenceResult]) -> None:
        """Stop a call whose workflow never started, and wait until it has let its turn go."""
        call.cancel()
        await asyncio.wait({call})
        if self._inference is not None:
            self._inference.forget_early(request)
