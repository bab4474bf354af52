"""How many responses' workflow tasks a worker takes at once: as many as wait on their model
call, and a bounded few more that work.

A turn's model call is a local activity inside its workflow task, so a task holds its slot for
the whole call. A worker must hold as many as an API process admits
(`WORKER_CONCURRENT_RESPONSES`, 1000), or a start past them is not taken eagerly and its first
task waits in the task queue. But when 1000 tasks that each need the CPU are taken at once (a
burst of background responses listing tools and asking for approval), two cores finish none
within the task timeout: tasks finished late are thrown away and done again, over and over.

So the two are counted apart. A task waiting on a model call (a local activity of its run is
running) needs no CPU; every other task in a slot (replaying, deciding) works. Waiting is
counted by run, not by call: a turn listing three MCP servers at once waits once. A poller is
given a slot to poll with only while fewer tasks work than it finished in the last
`WAIT_SECONDS` (its pace, measured over `FINISHED_WINDOW`), never fewer than
`WORKER_CONCURRENT_WORKFLOW_TASKS` (64), and fewer than `WORKER_CONCURRENT_RESPONSES` slots
are given in all: a thousand model calls still get a thousand slots, a worker that finishes
tasks fast is not throttled, and a burst of slow work waits in Temporal's queue instead of
timing out in the worker. (A fixed bound cannot do both: 64 refused 27 % of the eager starts
at concurrency 50 with a fast backend, sending them through the task queue at +1.3 ms of
Temporal's CPU each; 128 let a burst finish 468 tasks after their timeout.) A slot a poller
holds while it waits for a task is not work (counted, an idle sticky poller's would keep the
others from polling): at most one task a poller more than the bound works at once. This
counts what the worker does, not what the machine's CPU shows (Temporal's resource-based
supplier): a machine busy with other work does not cut a worker's model calls to its
minimum, and a burst is bounded before the CPU shows it.

What it costs: core calls into Python (taking the GIL) three times a workflow task, where a
fixed supplier stays in Rust. `python -m bench.ab` against this file with a fixed supplier:
+0.5 ms of `dev`'s CPU and +0.3 ms of Temporal's a response, about 5 % of the requests a
second at concurrency 10. Model calls' slots stay a fixed supplier for that reason.

Temporal's core calls `mark_slot_used` and `release_slot` from its own threads, and
`reserve_slot` on the worker's event loop: the counts are under a lock, and a waiting
reservation is woken on its own loop. Which run a local activity belongs to only the activity
itself knows (a slot's context names its type alone): an activity interceptor counts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from temporalio import activity
from temporalio.worker import (
    ActivityInboundInterceptor,
    CustomSlotSupplier,
    ExecuteActivityInput,
    FixedSizeSlotSupplier,
    Interceptor,
    SlotMarkUsedContext,
    SlotPermit,
    SlotReleaseContext,
    SlotReserveContext,
    WorkerTuner,
)

WAIT_SECONDS = 2.0
"""A task taken waits about this long for the CPU (a fifth of its timeout, so one slower than
the rest still ends in time). Concurrency 50 with a backend that answers at once keeps ~100
tasks working for about a second each (a response's last task overlaps its client's next
request): at 1 s, 281 of 1,503 starts were refused eagerly, at 2 s 61."""
FINISHED_WINDOW = 5.0
"""Over how many seconds a worker's pace is measured."""
ACTIVITY_SLOTS = 100
"""The responses' queue's own activities (Temporal's default)."""


class Permit(SlotPermit):
    """A slot given; `used` once a task runs in it."""

    def __init__(self) -> None:
        self.used = False


class SlotCounts:
    """A worker's workflow tasks taken, the runs whose model calls (local activities) run, and
    the reservations waiting for either to change."""

    def __init__(self, most: int, working: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.most = most
        self.working = working
        """The fewest tasks allowed to work at once, however slowly they finish."""
        self.clock = clock
        self._finished: deque[float] = deque()
        """When each task of the last `FINISHED_WINDOW` seconds was finished."""
        self.tasks = 0
        """Workflow-task slots given and not yet released (a poller's, or holding a task)."""
        self.tasks_used = 0
        """Of them, those holding a task."""
        self.calls: Counter[str] = Counter()
        """Local activities running, by workflow run: each such run's task is held open, waiting."""
        self.lock = threading.Lock()
        self._waiting: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def take_task(self, *, in_hand: bool = False) -> Permit | None:
        """A slot to poll with, or (`in_hand`) for a task already here (an eager start's),
        counted as working from now: many starts at once are each asked before any is used."""
        with self.lock:
            waiting = min(len(self.calls), self.tasks_used)
            if self.tasks >= self.most or self.tasks_used - waiting >= self._bound():
                return None
            self.tasks += 1
            permit = Permit()
            if in_hand:
                permit.used = True
                self.tasks_used += 1
            return permit

    def finish_task(self) -> None:
        """A task that held a slot ended (under the lock)."""
        self.tasks_used -= 1
        self._finished.append(self.clock())

    def _bound(self) -> int:
        """How many may work at once: as many as this worker finished in the last
        `WAIT_SECONDS` (measured over `FINISHED_WINDOW`), so one taken waits about that long for
        the CPU, and never fewer than `working` (under the lock)."""
        since = self.clock() - FINISHED_WINDOW
        while self._finished and self._finished[0] < since:
            self._finished.popleft()
        return max(self.working, int(len(self._finished) * WAIT_SECONDS / FINISHED_WINDOW))

    def call_began(self, run_id: str) -> None:
        """A local activity of `run_id` runs: its task may now wait rather than work."""
        with self.lock:
            self.calls[run_id] += 1
        self.wake()

    def call_ended(self, run_id: str) -> None:
        with self.lock:
            self.calls[run_id] -= 1
            if self.calls[run_id] <= 0:
                del self.calls[run_id]

    async def wait(self, take: Callable[[], Permit | None]) -> Permit:
        """A permit, once there is room for one."""
        loop = asyncio.get_running_loop()
        while True:
            woken: asyncio.Future[None] = loop.create_future()
            with self.lock:  # registered before trying, so a release between the two is not missed
                self._waiting.append((loop, woken))
            permit = take()
            if permit is not None:
                self._forget(woken)
                return permit
            try:
                await woken
            finally:
                self._forget(woken)

    def wake(self) -> None:
        """Counts changed: every waiting reservation tries again (a few: one per poller)."""
        with self.lock:
            waiting, self._waiting = self._waiting, []
        for loop, woken in waiting:
            with contextlib.suppress(RuntimeError):  # its loop closed: nothing waits there any more
                loop.call_soon_threadsafe(_resolve, woken)

    def _forget(self, woken: asyncio.Future[None]) -> None:
        with self.lock:
            self._waiting = [pair for pair in self._waiting if pair[1] is not woken]


def _resolve(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


class WorkflowTaskSlots(CustomSlotSupplier):
    """A slot is given while fewer than `working` tasks work and `most` slots are given."""

    def __init__(self, counts: SlotCounts) -> None:
        self.counts = counts

    async def reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit:
        return await self.counts.wait(self.counts.take_task)

    def try_reserve_slot(self, ctx: SlotReserveContext) -> SlotPermit | None:
        return self.counts.take_task(in_hand=True)  # asked only for an eager start

    def mark_slot_used(self, ctx: SlotMarkUsedContext) -> None:
        if isinstance(ctx.permit, Permit) and not ctx.permit.used:
            ctx.permit.used = True
            with self.counts.lock:
                self.counts.tasks_used += 1

    def release_slot(self, ctx: SlotReleaseContext) -> None:
        with self.counts.lock:
            self.counts.tasks -= 1
            if isinstance(ctx.permit, Permit) and ctx.permit.used:
                self.counts.finish_task()
        self.counts.wake()


class CallCounting(Interceptor):
    """Counts each running local activity under its workflow run."""

    def __init__(self, counts: SlotCounts) -> None:
        self.counts = counts

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _CountedCall(next, self.counts)


class _CountedCall(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, counts: SlotCounts) -> None:
        super().__init__(next)
        self.counts = counts

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        info = activity.info()
        if not info.is_local or not info.workflow_run_id:
            return await super().execute_activity(input)
        self.counts.call_began(info.workflow_run_id)
        try:
            return await super().execute_activity(input)
        finally:
            self.counts.call_ended(info.workflow_run_id)


@dataclass(frozen=True)
class ResponseSlots:
    """The responses' worker's slots, and the interceptor that tells them which runs wait."""

    tuner: WorkerTuner
    interceptor: Interceptor


def response_slots(most: int, working: int) -> ResponseSlots:
    """Workflow tasks while fewer than `working` work (at most `most` taken), model calls at
    most `most`."""
    counts = SlotCounts(most, max(1, min(working, most)))
    tuner = WorkerTuner.create_composite(
        workflow_supplier=WorkflowTaskSlots(counts),
        activity_supplier=FixedSizeSlotSupplier(ACTIVITY_SLOTS),
        # Model calls: a fixed bound, kept in Temporal's core (no call into Python a slot).
        local_activity_supplier=FixedSizeSlotSupplier(most),
        nexus_supplier=FixedSizeSlotSupplier(ACTIVITY_SLOTS),
    )
    return ResponseSlots(tuner, CallCounting(counts))
