"""The worker's side of the upstream budgets: which deployment a call goes to, and when.

A deployment with a known limit (the file's `rpm`/`tpm`, or a rate learned from a 429 by any
worker) is paced through its shared budget in the store (`upstream/budgets.py`): one
transaction a call. One with no limit known costs no store round trip: this process only
caps its own calls in flight to it (a window that starts at `INITIAL_WINDOW` and grows by
one with each success, as slow start does), so a cold burst of thousands cannot all reach
a backend that would refuse most of them. The first 429 makes the deployment limited for
every process (each reads the budgets again within `REFRESH_SECONDS`).

A `*` deployment (and the one deployment there is without a models file) keeps a budget per
model name it serves, as providers limit each model on its own; a named deployment keeps one.

Among several deployments of one model name, a call goes to the one that can take it
soonest; one that just failed (5xx, timeout) is passed over for `COOLDOWN_SECONDS` while
another can serve.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from chat_completions.client import exhausted_for
from models.errors import CapacityWaitError, RateLimitedUpstreamError, RejectedByUpstreamError
from telemetry import metrics
from upstream import pacing
from upstream.budgets import Budgets
from upstream.pacing import BudgetState, Defer, Grant, Lane
from upstream.registry import ANY_MODEL, Deployment, ModelRegistry

INITIAL_WINDOW = 32
MAX_REMEMBERED = 10_000
"""Budgets this process keeps its own counts for; idle ones beyond it are forgotten."""
MAX_WINDOW = 4096
REFRESH_SECONDS = 1.0
COOLDOWN_SECONDS = 5.0
WAITING_GRACE_SECONDS = 1.0
"""A response told to wait counts as waiting this long past its time (its workflow's next try)."""
FIRST_GUESS_RATE = 10.0
"""Requests a second a deployment is taken to have been taking at its first 429, at least."""
RATE_WINDOW_SECONDS = 1.0
"""Successes this long back make the sending rate a first 429 is measured against."""


@dataclass
class _Local:
    """What this process knows of one deployment."""

    window: int = INITIAL_WINDOW
    in_flight: int = 0
    successes: deque[float] = field(default_factory=deque)
    cooling_until: float = 0.0
    freed: asyncio.Event = field(default_factory=asyncio.Event)

    def sending_rate(self, now: float) -> float | None:
        while self.successes and self.successes[0] < now - RATE_WINDOW_SECONDS:
            self.successes.popleft()
        return len(self.successes) / RATE_WINDOW_SECONDS if self.successes else None


@dataclass
class Slot:
    """A granted call to `deployment`; tell it how the call went."""

    deployment: Deployment
    key: str
    """Its budget (`Deployment.budget_key`)."""
    outcome: Literal["ok", "rate_limited", "failed"] = "failed"
    tokens: int = 0
    exhausted_for: float | None = None
    """Seconds the provider said (`x-ratelimit-*` of a successful answer) it takes no more."""

    def succeeded(self, tokens: int) -> None:
        self.outcome, self.tokens = "ok", tokens

    def saw(self, headers: Mapping[str, str]) -> None:
        self.exhausted_for = exhausted_for(headers)


class UpstreamGate:
    def __init__(self, registry: ModelRegistry, budgets: Budgets, clock: Callable[[], float] = time.time) -> None:
        self.registry = registry
        self.budgets = budgets
        self.clock = clock
        self._local: dict[str, _Local] = {}
        self._states: dict[str, BudgetState] = {}
        self._read_at = float("-inf")
        self._waiting: dict[str, dict[str, float]] = {}
        """Deployment -> the responses this process told to wait for its capacity -> until when."""

    def local(self, key: str) -> _Local:
        local = self._local.get(key)
        if local is None:
            if len(self._local) >= MAX_REMEMBERED:
                for idle in [each for each, known in self._local.items() if not known.in_flight][:1000]:
                    del self._local[idle]
            local = self._local[key] = _Local()
        return local

    @contextlib.asynccontextmanager
    async def slot(
        self, model: str, lane: Lane, project: str, waiter: str = "", *, returning: bool = False
    ) -> AsyncIterator[Slot]:
        """A call to one of `model`'s deployments, when its budget allows (raises
        `CapacityWaitError` when none can take it soon); its end is accounted for. `waiter`:
        the response the call is for (counted among those waiting while it waits);
        `returning`: it comes back from a wait for capacity (`pacing.reserve`)."""
        try:
            deployment, wait = await self._granted(model, lane, project, returning)
        except CapacityWaitError as error:
            self._wait(error.deployment_id, waiter, error.wait_seconds)
            raise
        self._wait(deployment.id, waiter, None)
        slot = Slot(deployment, deployment.budget_key(model))
        self.local(slot.key).in_flight += 1
        try:
            if wait > 0:
                metrics.upstream_waiting(deployment.id, +1)
                try:
                    await asyncio.sleep(wait)
                finally:
                    metrics.upstream_waiting(deployment.id, -1)
            yield slot
        except RateLimitedUpstreamError as error:
            slot.outcome = "rate_limited"
            self._wait(deployment.id, waiter, error.retry_after or 1.0)
            await self._rate_limited(slot, error)
            raise
        finally:
            await self._ended(slot)

    async def _granted(self, model: str, lane: Lane, project: str, returning: bool) -> tuple[Deployment, float]:
        """The deployment whose budget gave the call a slot, and how long until it."""
        deployments = self.registry.serving(model)
        if not deployments:  # the API refuses such models: this worker's models file differs from the API's
            raise RejectedByUpstreamError(
                f"no deployment serves model {model!r} on this worker (its models file "
                "does not name it: give every process the same MODELS_FILE)"
            )
        await self._refresh()
        now = self.clock()
        ordered = sorted(
            deployments,
            key=lambda each: (
                self.local(each.budget_key(model)).cooling_until > now,
                self._estimate(each, each.budget_key(model), lane, now),
            ),
        )
        soonest: float | None = None
        for deployment in ordered:
            key = deployment.budget_key(model)
            decision = await self._decide(deployment, key, lane, project, returning)
            if isinstance(decision, Grant):
                return deployment, decision.wait_seconds
            soonest = decision.wait_seconds if soonest is None else min(soonest, decision.wait_seconds)
        metrics.upstream_deferred(ordered[0].id, lane)
        raise CapacityWaitError(ordered[0].shown_for(model), soonest or 0.0, deployment_id=ordered[0].id)

    def _limited(self, deployment: Deployment, key: str, now: float) -> bool:
        state = self._states.get(key, BudgetState())
        return pacing.is_limited(state, deployment.limits(), now)

    def _estimate(self, deployment: Deployment, key: str, lane: Lane, now: float) -> float:
        state = self._states.get(key, BudgetState())
        return pacing.estimated_wait(state, deployment.limits(), now, lane, 0.0)

    async def _decide(
        self, deployment: Deployment, key: str, lane: Lane, project: str, returning: bool
    ) -> Grant | Defer:
        if self._limited(deployment, key, self.clock()):
            return await self.budgets.reserve(
                key, deployment.limits(), lane, project, returning=returning, spread=random.random()
            )
        return await self._windowed(key, lane)

    async def _windowed(self, key: str, lane: Lane) -> Grant | Defer:
        """No limit known: within this process's window of calls in flight, at once or when a
        call ends (within the lane's horizon)."""
        local = self.local(key)
        started = self.clock()
        deadline = started + pacing.horizon(lane)
        while local.in_flight >= local.window:
            remaining = deadline - self.clock()
            if remaining <= 0:
                return Defer(wait_seconds=random.uniform(0.1, 0.5))
            local.freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(local.freed.wait(), remaining)
        return Grant(wait_seconds=0.0)

    async def _ended(self, slot: Slot) -> None:
        deployment, local, now = slot.deployment, self.local(slot.key), self.clock()
        local.in_flight -= 1
        local.freed.set()
        if slot.outcome == "ok":
            local.successes.append(now)
            local.window = min(MAX_WINDOW, local.window + 1)
            local.cooling_until = 0.0
            if deployment.tpm:
                await self.budgets.charge_tokens(slot.key, deployment.limits(), slot.tokens)
            if slot.exhausted_for is not None:  # none left: wait for the provider's reset, not for a 429
                self._states[slot.key] = await self.budgets.exhausted(slot.key, slot.exhausted_for)
        elif slot.outcome == "failed" and len(self.registry.serving(deployment.model_name)) > 1:
            local.cooling_until = now + COOLDOWN_SECONDS

    async def _rate_limited(self, slot: Slot, error: RateLimitedUpstreamError) -> None:
        deployment = slot.deployment
        metrics.upstream_rate_limited(deployment.id)
        local = self.local(slot.key)
        local.window = max(1, local.window // 2)
        sending = local.sending_rate(self.clock())
        if slot.key not in self._states or self._states[slot.key].learned_rate is None:
            # A first 429 usually meets a cold burst, before many calls have come back: what
            # came back in the last second says too little, and a rate guessed too low spreads
            # the waiting responses' turns far into the future. Guess high; the next 429s cut.
            sending = max(sending or 0.0, FIRST_GUESS_RATE)
        state = await self.budgets.rate_limited(
            slot.key,
            deployment.limits(),
            retry_after=error.retry_after,
            sending_rate=sending,
            provider_rate=error.provider_rate,
        )
        self._states[slot.key] = state  # limited from this call on, here at once
        if slot.key == deployment.id:
            metrics.upstream_rate(deployment.id, pacing.rate(state, deployment.limits(), self.clock()))

    def _wait(self, deployment: str, waiter: str, seconds: float | None) -> None:
        """`waiter` waits for `deployment`'s capacity for `seconds` (None: it waits no more);
        the gauge counts, per deployment, the responses this process told to wait whose time
        has not passed (one that comes back to another worker leaves the count when its time
        passes)."""
        waiting = self._waiting.get(deployment)
        if not waiter or (seconds is None and (waiting is None or waiter not in waiting)):
            return  # the plain path: nothing waited, nothing to count
        if waiting is None:
            waiting = self._waiting[deployment] = {}
        if seconds is None:
            del waiting[waiter]
        else:
            waiting[waiter] = self.clock() + seconds + WAITING_GRACE_SECONDS
        metrics.upstream_waiting_responses(deployment, len(waiting))

    def _count_waiting(self, now: float) -> None:
        """Forget the waiters whose time has passed (they came back elsewhere, or ended)."""
        for deployment, waiting in self._waiting.items():
            for gone in [waiter for waiter, until in waiting.items() if until <= now]:
                del waiting[gone]
            metrics.upstream_waiting_responses(deployment, len(waiting))

    async def _refresh(self) -> None:
        now = self.clock()
        if now - self._read_at < REFRESH_SECONDS:
            return
        self._read_at = now
        self._count_waiting(now)
        self._states = await self.budgets.states()
        for deployment in self.registry.deployments:
            if deployment.model_name != ANY_MODEL:
                state = self._states.get(deployment.id, BudgetState())
                metrics.upstream_rate(deployment.id, pacing.rate(state, deployment.limits(), now))
