"""What the store and Temporal keep, and for how long.

- An unstored response (`store: false`) keeps its row and event log after it ends only until
  its request or stream has taken its end; one whose client went away is removed once it is
  `unstored_seconds` old.
- An event log whose response is gone is removed: each pass looks at the next 200 logs, so
  a pass costs the same however many responses wait.
- With `retention_days` set (off by default), a stored response that ended and is older is
  deleted, with everything it left in the store; its workflow history in Temporal goes after
  it (`response_service/history_eraser.py`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from store.event_log import EventLog
from store.responses import Responses

log = logging.getLogger(__name__)


class Retention:
    def __init__(
        self,
        responses: Responses,
        events: EventLog,
        *,
        unstored_seconds: float,
        retention_days: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.clock = clock
        """What time it is (the wall clock; a test's or a fault bed's own)."""
        self.responses = responses
        self.events = events
        self.unstored_seconds = unstored_seconds
        self.retention_days = retention_days
        self._events_after = ""
        """Where the next look for event logs without a response starts."""

    async def sweep(self) -> int:
        """One pass; returns how many responses (or leftover logs) it removed."""
        now = self.clock()
        removed = await self.responses.sweep_unstored(now - self.unstored_seconds)
        orphaned, self._events_after = await self.events.sweep_orphaned(self._events_after)
        removed += orphaned
        if self.retention_days > 0:
            for response_id in await self.responses.expired(now - self.retention_days * 86400):
                await self.responses.purge(response_id)
                removed += 1
        return removed
