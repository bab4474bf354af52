"""One run of a piece of work per key in this process.

A local activity runs again when its workflow task is retried: the task timed out on a
loaded worker, or the workflow was evicted from the worker's cache. The first execution may
still be working then. A second caller with the same key awaits the first one's outcome
instead of starting its own, so the model is asked once. The work runs in a task of its own,
so a caller that is cancelled (evicted) leaves it running for the one that takes its place.
Work started ahead of its caller (`start(..., kept=True)`: the first turn's call and input
check, begun while the workflow starts) keeps its outcome, once done, for the caller that
comes after it, so a caller late by a moment neither repeats it nor misses its failure.
"""

from __future__ import annotations

import asyncio
import typing
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

MAX_KEPT = 1024
"""Outcomes kept for callers still to come; past it the oldest are dropped (their callers ran
elsewhere: another worker took the workflow's task)."""


class SingleFlight:
    def __init__(self) -> None:
        self._running: dict[Hashable, asyncio.Future[Any]] = {}
        self._keeping: dict[Hashable, asyncio.Future[Any]] = {}
        """Work started ahead of its caller, whose outcome no caller has taken yet."""
        self._kept: dict[Hashable, asyncio.Future[Any]] = {}
        self._closed = False

    async def run(self, key: Hashable, work: Callable[[], Awaitable[T]]) -> T:
        if self._closed:
            # A stopping worker takes no new work. Temporal's core retries a local activity
            # even while its worker shuts down, so this waits (until the process ends and
            # cancels it) instead of failing, which would spend the retry budget in moments.
            await asyncio.get_running_loop().create_future()
        kept = self._kept.pop(key, None)
        if kept is not None:  # done before this caller came
            return typing.cast(T, kept.result())
        task = self.start(key, work)
        # This caller takes the outcome now, even when the work ended a moment ago and its
        # done callbacks (which keep it) have yet to run: no later caller is given it again.
        taking = self._keeping.get(key) is task
        if taking:
            del self._keeping[key]
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if taking:  # evicted before the outcome: it waits for the caller that takes its place
                if not task.done():
                    self._keeping[key] = task
                elif not task.cancelled():
                    self._keep_outcome(key, task)
            raise

    def start(self, key: Hashable, work: Callable[[], Awaitable[T]], *, kept: bool = False) -> asyncio.Future[T]:
        """The work of `key` running: the one already running, or `work` started now; `kept`:
        its outcome waits, once done, for the next `run` of its key."""
        task = self._running.get(key)
        if task is None:
            task = asyncio.ensure_future(work())
            self._running[key] = task
            task.add_done_callback(lambda done: self._forget(key, done))
            if kept:
                self._keeping[key] = task
                task.add_done_callback(lambda done: self._keep(key, done))
        return task

    def forget(self, key: Hashable) -> None:
        """Drop a kept outcome nobody will come for."""
        self._kept.pop(key, None)
        self._keeping.pop(key, None)

    def _keep(self, key: Hashable, task: asyncio.Future[Any]) -> None:
        if self._keeping.get(key) is not task:  # a caller took it, or it was forgotten
            return
        del self._keeping[key]
        if not task.cancelled():
            self._keep_outcome(key, task)

    def _keep_outcome(self, key: Hashable, task: asyncio.Future[Any]) -> None:
        self._kept[key] = task
        while len(self._kept) > MAX_KEPT:
            del self._kept[next(iter(self._kept))]

    def _forget(self, key: Hashable, task: asyncio.Future[Any]) -> None:
        if self._running.get(key) is task:
            del self._running[key]
        if not task.cancelled():
            task.exception()  # retrieved: a failure nobody awaited any more is not logged as lost

    async def close(self, grace_seconds: float = 0.0) -> None:
        """Take no more work; let what runs finish for up to `grace_seconds`, then stop it."""
        self._closed = True
        running = list(self._running.values())
        if running and grace_seconds > 0:
            await asyncio.wait(running, timeout=grace_seconds)
        await self.cancel_all()

    async def cancel_all(self) -> None:
        """Stop every piece of work still running and wait for them."""
        running = list(self._running.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    @property
    def closed(self) -> bool:
        return self._closed

    def __len__(self) -> int:
        return len(self._running)
