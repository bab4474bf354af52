"""Writes an activity's stream events to the event log without holding the stream up.

The first event is written at once. Events that arrive while a write is in flight are
written together right after it, so batching grows with load and adds no fixed delay.
"""

from __future__ import annotations

import asyncio
from typing import Any

from models.events import StreamEvent
from store.event_log import EventLog
from store.turns import Fence


class EventEmitter:
    def __init__(self, log: EventLog, response_id: str, fence: Fence | None = None) -> None:
        self.log = log
        self.response_id = response_id
        self.fence = fence
        self._pending: list[dict[str, Any]] = []
        self._writer: asyncio.Task[None] | None = None

    def emit(self, events: list[StreamEvent]) -> None:
        if not events:
            return
        self._pending.extend(event.wire() for event in events)
        if self._writer is None or self._writer.done():
            if self._writer is not None and self._writer.exception() is not None:
                return  # close() reports the failure
            self._writer = asyncio.create_task(self._write_pending())

    async def _write_pending(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            await self.log.append(self.response_id, batch, fence=self.fence)

    async def close(self) -> None:
        """Wait until everything emitted is in the log (raises if a write failed)."""
        if self._writer is not None:
            await self._writer
        if self._pending:
            await self._write_pending()
