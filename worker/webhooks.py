"""Webhook deliveries per endpoint, from the outbox (`store/webhooks.py`).

One dispatcher in the cluster delivers: its rounds are a chore of `worker/housekeeping.py`
(a lease in the store, renewed while a round works; another worker takes over within seconds
of its death), run every `ROUND_SECONDS` and at once when an event is put. Each round takes the endpoints
whose queue is due, and delivers each one's events in the order they were put, endpoints side
by side. A failed attempt stops its endpoint: the endpoint is tried again after a backoff
that grows with its failures in a row, from the same event, until that event's policy gives
up on it. After `CIRCUIT_THRESHOLD` failures in a row the endpoint's circuit opens: nothing is
sent to it for a cooldown that doubles each time it opens again, then one event probes it. A
receiver that is down for a day costs a row an event in the outbox and a probe now and then,
and its backlog is in metrics (`durable_responses_webhook_backlog`), in one place.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from temporalio.exceptions import ApplicationError

from activities.webhooks import PROJECT_ENDPOINT_PREFIX
from models.webhooks import DeliverWebhookInput, DeliverWebhookResult, WebhookPolicy
from store.webhooks import DueQueue, OutboxEntry, WebhookOutbox
from telemetry import metrics

log = logging.getLogger(__name__)

Deliver = Callable[[DeliverWebhookInput], Awaitable[DeliverWebhookResult]]

LEASE = "webhook deliveries"
ROUND_SECONDS = 1.0
"""How often the dispatcher looks for due events when nothing wakes it."""
CIRCUIT_THRESHOLD = 5
CIRCUIT_BASE_SECONDS = 30.0
BATCH = 100
"""Events of one endpoint a round takes at most."""
REPORT_SECONDS = 10.0
PROJECTS_LABEL = "projects"
"""The metrics' label for the projects' endpoints (`we_...`) counted together: a label of its
own for each would be a series for each endpoint any project makes."""
"""How often the backlog is counted for metrics (a count over the backlog)."""


def backoff_seconds(policy: WebhookPolicy, attempts: int, jitter: float) -> float:
    """After `attempts` failed attempts: exponential within the policy, with jitter."""
    ceiling = min(policy.maximum_interval_seconds, policy.initial_interval_seconds * 2**attempts)
    return float(ceiling * (0.5 + jitter / 2))


def cooldown_seconds(policy: WebhookPolicy, failures: int) -> float:
    return float(
        min(
            max(policy.maximum_interval_seconds, CIRCUIT_BASE_SECONDS),
            CIRCUIT_BASE_SECONDS * 2 ** (failures - CIRCUIT_THRESHOLD),
        )
    )


class WebhookDispatcher:
    def __init__(
        self, outbox: WebhookOutbox, deliver: Deliver, *, concurrency: int = 50, clock: Callable[[], float] = time.time
    ) -> None:
        self.outbox = outbox
        self.deliver = deliver
        self.concurrency = concurrency
        self.clock = clock
        self._backlog_seen = True
        """Whether the last report saw events waiting (or an open circuit): an idle round with
        nothing due and nothing waiting reads nothing more."""
        self._reported_at = 0.0

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def due(self) -> bool:
        """Whether a round has work: an event due, or a backlog to count. (A read: the round's
        lease, a write, is taken only then.)"""
        return self._backlog_seen or bool(await self.outbox.due_queues(self._now_ms()))

    async def round(self) -> None:
        queues = await self.outbox.due_queues(self._now_ms())
        if queues or self._backlog_seen:
            slots = asyncio.Semaphore(self.concurrency)
            await asyncio.gather(*(self._endpoint(queue, slots) for queue in queues))
            await self._report()

    async def _endpoint(self, queue: DueQueue, slots: asyncio.Semaphore) -> None:
        """The endpoint's events in order, until one fails (or a batch is done: the next
        round goes on, so one endpoint's backlog does not hold a round for ever)."""
        failures = queue.failures
        for entry in await self.outbox.head(queue.endpoint, BATCH):
            async with slots:
                if not await self._attempt(entry, failures):
                    return
            failures = 0

    async def _attempt(self, entry: OutboxEntry, failures: int) -> bool:
        """Whether the endpoint may be sent its next event in this round."""
        now = self._now_ms()
        if now >= entry.give_up_at:
            metrics.webhook_attempt(entry.event.type, "gave_up", 0.0)
            log.warning(
                "webhook event %s to %s given up after %d attempts", entry.event.id, entry.endpoint, entry.attempts
            )
            await self.outbox.remove(entry, delivered=False)
            return True
        try:
            await self.deliver(
                DeliverWebhookInput(
                    endpoint=entry.endpoint, event=entry.event, timeout_seconds=entry.policy.attempt_timeout_seconds
                )
            )
        except Exception as error:  # noqa: BLE001 - classified: never again, or later
            if isinstance(error, ApplicationError) and error.non_retryable:
                await self.outbox.remove(entry, delivered=False)  # refused, or its endpoint deleted
                return True
            failures += 1
            delay = backoff_seconds(entry.policy, failures - 1, random.random())
            open_until = 0
            if failures >= CIRCUIT_THRESHOLD:
                cooldown = cooldown_seconds(entry.policy, failures)
                open_until = now + int(cooldown * 1000)
                log.warning(
                    "webhook endpoint %s failed %d times in a row (%s): nothing is sent to it for %.0f s",
                    entry.endpoint,
                    failures,
                    error,
                    cooldown,
                )
            await self.outbox.retry_later(entry, now + int(delay * 1000), open_until)
            return False
        await self.outbox.remove(entry, delivered=True)
        return True

    async def _report(self) -> None:
        if self.clock() - self._reported_at < REPORT_SECONDS and self._backlog_seen:
            return
        self._reported_at = self.clock()
        backlog, circuits = await self.outbox.backlog(), await self.outbox.open_circuits(self._now_ms())
        self._backlog_seen = bool(backlog or circuits)
        metrics.webhook_backlog(*labelled(backlog, circuits))


def labelled(backlog: dict[str, int], open_circuits: set[str]) -> tuple[Counter[str], Counter[str]]:
    """The backlog and the open circuits by the endpoint's label: an operator's endpoint by its
    name, the projects' together (`PROJECTS_LABEL`)."""

    def label(endpoint: str) -> str:
        return PROJECTS_LABEL if endpoint.startswith(PROJECT_ENDPOINT_PREFIX) else endpoint

    waiting: Counter[str] = Counter()
    for endpoint, count in backlog.items():
        waiting[label(endpoint)] += count
    return waiting, Counter(label(endpoint) for endpoint in open_circuits)
