"""Wake-ups keyed by response id, for changes made in this process or in any other.

A change made in this process calls `notify` and wakes its waiters at once, and tells the
other processes through the store's wake-up channel (`store/wakeups.py`), which wakes their
waiters at once too. Changes are also found by one poll per process: while anybody waits,
every `poll_seconds` a single query (`poll`) is asked which of the watched ids have news, so
the store's load does not grow with the number of waiters. While the channel is heard the
poll is only a safety net (a lost wake-up, a process that does not publish) and runs
`HEARD_POLL_FACTOR` times less often.

A waiter is a `Wakeup`: one wait, for one change. It is a bare future, with no task of its
own, so a change reaches the task that waits in the loop's next turn (an `asyncio.Event`
waited for with a timeout took two, and made a task every wait: on every event of every
stream).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable

from store.wakeups import Wakeups

log = logging.getLogger(__name__)

Poll = Callable[[list[str]], Awaitable[Iterable[str]]]

HEARD_POLL_FACTOR = 5


class Wakeup:
    """One waiter's wake-up: its future is done once a change (or its poll, or its wait's
    timeout) wakes it. For `asyncio.wait` beside other futures, or awaited alone."""

    __slots__ = ("future",)

    def __init__(self) -> None:
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(self) -> None:
        if not self.future.done():
            self.future.set_result(None)


class Notifier:
    def __init__(self, poll: Poll, poll_seconds: float, *, channel: Wakeups | None = None, topic: str = "") -> None:
        self._poll = poll
        self.poll_seconds = poll_seconds
        self._waiters: dict[str, set[Wakeup]] = defaultdict(set)
        self._poller: asyncio.Task[None] | None = None
        self._channel = channel
        self._topic = topic
        if channel is not None:
            channel.listen(topic, self._wake)

    def subscribe(self, response_id: str) -> Wakeup:
        """Register before reading, so a change between the read and the wait is not missed."""
        waiter = Wakeup()
        self._waiters[response_id].add(waiter)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll_other_processes())
        return waiter

    def unsubscribe(self, response_id: str, waiter: Wakeup) -> None:
        waiters = self._waiters.get(response_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[response_id]

    def notify(self, response_id: str) -> None:
        """A change made in this process: its waiters and every other process's hear of it."""
        self._wake(response_id)
        if self._channel is not None:
            self._channel.publish(self._topic, response_id)

    def _wake(self, response_id: str) -> None:
        for waiter in self._waiters.get(response_id, ()):
            waiter.wake()

    @staticmethod
    async def wait(waiter: Wakeup, timeout: float) -> float:
        """Wait for a notification or the timeout; returns the seconds waited."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        if not waiter.future.done():
            expiry = loop.call_later(timeout, waiter.wake)
            try:
                await waiter.future
            finally:
                expiry.cancel()
        return loop.time() - started

    async def _poll_other_processes(self) -> None:
        heard = self._channel is not None and await self._channel.hear()
        while self._waiters:
            await asyncio.sleep(self.poll_seconds * (HEARD_POLL_FACTOR if heard else 1))
            watched = list(self._waiters)  # as it is now: waiters come and go during the sleep
            if not watched:
                return
            try:
                changed = await self._poll(watched)
            except Exception as error:  # noqa: BLE001 - a failed poll is tried again next time
                log.warning("store poll failed: %s", error)
                continue
            for response_id in changed:
                self._wake(response_id)
            if self._channel is not None and not (heard := self._channel.hearing()):
                heard = await self._channel.hear()  # a lost connection: heard again, or polled
