"""Stops an activity's work as soon as the client cancels its response.

Temporal hands a workflow its cancel request only at the next workflow task; while a
local activity runs, that is the next workflow-task heartbeat, seconds away. So the API
also records the cancel in the store, and running activities watch for it here: woken at
once by a cancel made in this process, and by one batched store poll per worker for
cancels made in other processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Awaitable, TypeVar

from models.errors import CancelRequestedError
from store.repository import ResponseRepository

log = logging.getLogger(__name__)

T = TypeVar("T")


class CancelWatch:
    def __init__(self, repository: ResponseRepository, poll_seconds: float = 0.25) -> None:
        self.repository = repository
        self.poll_seconds = poll_seconds
        self._watched: dict[str, set[asyncio.Event]] = {}
        self._poller: asyncio.Task[None] | None = None

    async def run(self, response_id: str, work: Awaitable[T]) -> T:
        """Await `work`; if the response is cancelled first, stop it and raise
        `CancelRequestedError`."""
        cancelled = self._watch(response_id)
        working = asyncio.ensure_future(work)
        waiting = asyncio.ensure_future(cancelled.wait())
        try:
            await asyncio.wait({working, waiting}, return_when=asyncio.FIRST_COMPLETED)
            if working.done():
                return working.result()
            working.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await working
            raise CancelRequestedError(f"response {response_id} was cancelled")
        finally:
            for task in (working, waiting):
                task.cancel()
            self._unwatch(response_id, cancelled)

    def _watch(self, response_id: str) -> asyncio.Event:
        cancelled = self.repository.cancel_notifier.subscribe(response_id)
        self._watched.setdefault(response_id, set()).add(cancelled)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        return cancelled

    def _unwatch(self, response_id: str, cancelled: asyncio.Event) -> None:
        self.repository.cancel_notifier.unsubscribe(response_id, cancelled)
        events = self._watched.get(response_id)
        if events is not None:
            events.discard(cancelled)
            if not events:
                del self._watched[response_id]

    async def _poll(self) -> None:
        """One query for every watched response, while any is watched."""
        while self._watched:
            await asyncio.sleep(self.poll_seconds)
            try:
                found = await self.repository.cancel_requested(list(self._watched))
            except Exception as error:  # noqa: BLE001 - a failed poll is tried again next time
                log.warning("cancel poll failed: %s", error)
                continue
            for response_id in found:
                for cancelled in self._watched.get(response_id, ()):
                    cancelled.set()
