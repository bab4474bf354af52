"""Wake-ups keyed by response id, for changes made in this process or in any other.

A change made in this process calls `notify` and wakes its waiters at once. Changes made by
other processes are found by one poll per process: while anybody waits, every
`poll_seconds` a single query (`poll`) is asked which of the watched ids have news, so the
store's load does not grow with the number of waiters.
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable

log = logging.getLogger(__name__)

Poll = Callable[[list[str]], Awaitable[Iterable[str]]]


class Notifier:
    def __init__(self, poll: Poll, poll_seconds: float) -> None:
        self._poll = poll
        self.poll_seconds = poll_seconds
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._poller: asyncio.Task[None] | None = None

    def subscribe(self, response_id: str) -> asyncio.Event:
        """Register before reading, so a change between the read and the wait is not missed."""
        waiter = asyncio.Event()
        self._waiters[response_id].add(waiter)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll_other_processes())
        return waiter

    def unsubscribe(self, response_id: str, waiter: asyncio.Event) -> None:
        waiters = self._waiters.get(response_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[response_id]

    def notify(self, response_id: str) -> None:
        for waiter in self._waiters.get(response_id, ()):
            waiter.set()

    @staticmethod
    async def wait(waiter: asyncio.Event, timeout: float) -> float:
        """Wait for a notification or the timeout; returns the seconds waited."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await asyncio.wait_for(waiter.wait(), timeout)
        except TimeoutError:
            pass
        return loop.time() - started

    async def _poll_other_processes(self) -> None:
        while self._waiters:
            await asyncio.sleep(self.poll_seconds)
            watched = list(self._waiters)  # as it is now: waiters come and go during the sleep
            if not watched:
                return
            try:
                changed = await self._poll(watched)
            except Exception as error:  # noqa: BLE001 - a failed poll is tried again next time
                log.warning("store poll failed: %s", error)
                continue
            for response_id in changed:
                self.notify(response_id)
