"""Server-sent events: tail a response's event log until its terminal event.

The event log wakes a tail when its response has new events (at once for events written
in this process, at its next poll for others). A client that goes away stops only its own
tail; the response goes on.
"""

from __future__ import annotations

from typing import AsyncIterator

from store.event_log import TERMINAL_EVENT_TYPES, StoredEvent
from store.repository import ResponseRepository

# How often a tail with no new events checks that its response has not ended another way.
STALL_CHECK_SECONDS = 2.0


def frame(event: StoredEvent) -> str:
    return f"event: {event.type}\ndata: {event.data}\n\n"


async def tail(
    repository: ResponseRepository, response_id: str, *, after: int, forget_at_end: bool = False
) -> AsyncIterator[str]:
    log, notifier = repository.events, repository.events.notifier
    last = after
    while True:
        waiter = notifier.subscribe(response_id)
        try:
            batch = await log.read(response_id, after=last)
            if not batch:
                waited = await notifier.wait(waiter, STALL_CHECK_SECONDS)
                if waited >= STALL_CHECK_SECONDS and await _ended_without_terminal_event(repository, response_id, last):
                    return
                continue
        finally:
            notifier.unsubscribe(response_id, waiter)
        for event in batch:
            last = event.sequence_number
            yield frame(event)
            if event.type in TERMINAL_EVENT_TYPES:
                if forget_at_end:
                    await repository.purge(response_id)
                return


async def _ended_without_terminal_event(repository: ResponseRepository, response_id: str, last: int) -> bool:
    """A response that is gone or finished, with nothing left to read: nothing will come."""
    response = await repository.get_response(response_id, include_unstored=True)
    if response is not None and not response.is_terminal:
        return False
    return not await repository.events.read(response_id, after=last, limit=1)
