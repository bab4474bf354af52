"""The API's side of the upstream budgets: an interactive request whose model has no
capacity within its wait budget is refused with a 429 and `retry-after`, before anything is
kept (a background response is accepted and waits durably instead).

It reads every deployment's budget at most once every `REFRESH_SECONDS` (one query), so a
request to a model with no known limit costs nothing here.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from models.errors import RateLimitedError
from upstream import pacing
from upstream.budgets import Budgets
from upstream.pacing import BudgetState
from upstream.registry import ModelRegistry

REFRESH_SECONDS = 1.0


class CapacityCheck:
    def __init__(
        self, registry: ModelRegistry, budgets: Budgets, wait_seconds: float, clock: Callable[[], float] = time.time
    ) -> None:
        self.registry = registry
        self.budgets = budgets
        self.wait_seconds = wait_seconds
        self.clock = clock
        self._states: dict[str, BudgetState] = {}
        self._read_at = float("-inf")

    async def check(self, model: str) -> None:
        """Raises `RateLimitedError` when no deployment of `model` has a slot soon enough."""
        now = self.clock()
        if now - self._read_at >= REFRESH_SECONDS:
            self._read_at = now
            self._states = await self.budgets.states()
        if not self._states:
            return
        waits = []
        for deployment in self.registry.serving(model):
            state = self._states.get(deployment.budget_key(model), BudgetState())
            if not pacing.is_limited(state, deployment.limits(), now):
                return  # a deployment with no known limit takes it
            waits.append(pacing.estimated_wait(state, deployment.limits(), now, "interactive", 0.0))
        soonest = min(waits, default=0.0)
        if soonest > self.wait_seconds:
            raise RateLimitedError(
                f"Model {model} is at its rate limit: no capacity within {self.wait_seconds:g} s "
                f"(the next in about {soonest:.0f} s). Try again later, or send it with `background: true` to "
                "wait for capacity on the server.",
                retry_after_seconds=max(1, math.ceil(soonest - self.wait_seconds)),
            )
