"""Writes an activity's stream events to the event log without holding the stream up.

The first event is written at once. Events that arrive while a write is in flight are
written together right after it, so batching grows with load and adds no fixed delay; text
deltas of one item that queued up meanwhile are written as one delta (a long reply arriving a
word a chunk is a few hundred rows, not one per word). With `pending_deltas` (the stream
assembler's), text is not made into events as it arrives: each write asks for what has grown
since the last, so a chunk costs an append, not an event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from models.events import StreamEvent
from store.event_log import EventLog
from store.turns import Fence


class EventEmitter:
    def __init__(
        self,
        log: EventLog,
        response_id: str,
        fence: Fence | None = None,
        pending_deltas: Callable[[], list[StreamEvent]] | None = None,
    ) -> None:
        self.log = log
        self.response_id = response_id
        self.fence = fence
        self._pending: list[dict[str, Any]] = []
        self._writer: asyncio.Task[None] | None = None
        self._deltas = pending_deltas

    def emit(self, events: list[StreamEvent]) -> None:
        """Events to write; with `pending_deltas`, also "text has grown" (even with none)."""
        if events:
            self._pending.extend(event.wire() for event in events)
        elif self._deltas is None:
            return
        if self._writer is None or self._writer.done():
            if self._writer is not None and self._writer.exception() is not None:
                return  # close() reports the failure
            self._writer = asyncio.create_task(self._write_pending())

    def _take(self) -> list[dict[str, Any]]:
        if self._deltas is not None:
            self._pending.extend(event.wire() for event in self._deltas())
        batch, self._pending = self._pending, []
        return batch

    async def _write_pending(self) -> None:
        while batch := self._take():
            await self.log.append(self.response_id, coalesced(batch), fence=self.fence)

    async def close(self) -> None:
        """Wait until everything emitted is in the log (raises if a write failed)."""
        if self._writer is not None:
            await self._writer
        await self._write_pending()


MERGEABLE = frozenset({"response.output_text.delta", "response.reasoning_text.delta"})
"""Text deltas: a long reply's are many. (A call's arguments are short, and clients show them
piece by piece as they come.)"""


def coalesced(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive deltas of the same item and part as one (their texts, and logprobs, joined)."""
    merged: list[dict[str, Any]] = []
    texts: list[str] = []
    logprobs: list[Any] = []

    def close() -> None:
        if len(texts) > 1:
            merged[-1] = merged[-1] | {"delta": "".join(texts)}
            if logprobs:
                merged[-1]["logprobs"] = logprobs.copy()
        texts.clear()
        logprobs.clear()

    for event in events:
        last = merged[-1] if merged else None
        if not (
            last is not None
            and event["type"] in MERGEABLE
            and last["type"] == event["type"]
            and last.get("item_id") == event.get("item_id")
            and last.get("content_index") == event.get("content_index")
        ):
            close()
            merged.append(event)
        if event["type"] in MERGEABLE:
            texts.append(event["delta"])
            logprobs.extend(event.get("logprobs") or [])
    close()
    return merged
