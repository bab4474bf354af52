"""Server-sent events: tail a response's event log until its terminal event.

The event log wakes a tail when its response has new events (at once for events written
in this process, at its next poll for others). A tail sends what one read of the log found
at once, in one chunk. A client that goes away stops only its own tail; the response goes
on.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from models.events import ErrorEvent
from store.event_log import TERMINAL_EVENT_TYPES, EventLog, StoredEvent
from store.responses import Responses
from telemetry import metrics

log_error = logging.getLogger(__name__)


class StreamSource(Protocol):
    """What a stream reads: the response's event log, and the response itself when its log
    falls silent (the store's hub has both)."""

    @property
    def events(self) -> EventLog: ...

    @property
    def responses(self) -> Responses: ...


# How often a tail with no new events checks that its response has not ended another way.
STALL_CHECK_SECONDS = 2.0


# Characters that are text to JSON and to the SSE spec, but that many line splitters (Python's
# `str.splitlines`, and so httpx's `iter_lines`) take for line breaks, cutting an event in two.
# Inside JSON they can only be in strings, where their escapes mean the same.
_LINE_BREAKS_TO_SOME = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def frame(event: StoredEvent) -> str:
    data = event.data
    for character, escaped in _LINE_BREAKS_TO_SOME.items():
        if character in data:
            data = data.replace(character, escaped)
    return f"event: {event.type}\ndata: {data}\n\n"


async def tail(
    source: StreamSource,
    response_id: str,
    *,
    after: int,
    forget_at_end: Callable[[str], Awaitable[None]] | None = None,
    live_since_ms: int | None = None,
) -> AsyncIterator[str]:
    """The response's events after `after` as SSE frames (`logged_batches`), the frames of one
    read in one chunk: one send through the middleware and one write to the socket for what
    was logged together (a stream's opening events, a delta's item events), not one each."""
    async for batch in logged_batches(
        source, response_id, after=after, forget_at_end=forget_at_end, live_since_ms=live_since_ms
    ):
        yield "".join(frame(event) for event in batch)


async def logged_batches(
    source: StreamSource,
    response_id: str,
    *,
    after: int,
    forget_at_end: Callable[[str], Awaitable[None]] | None = None,
    live_since_ms: int | None = None,
) -> AsyncIterator[list[StoredEvent]]:
    """The response's events after `after`, then its new ones as they come, to its terminal
    event (then `forget_at_end`, for an unstored response), in the batches its reads find. A
    stream that cannot reach one (its response ended without logging it, or the store fails)
    ends with an `error` event instead of a silent close. Events written since
    `live_since_ms` (default: now) count in the stream's lag: a new response's stream is live
    from its request, though it may open after its first events were written; a resumed
    one's old events do not count."""
    log, notifier = source.events, source.events.notifier
    last = after
    opened_at_ms = live_since_ms if live_since_ms is not None else int(time.time() * 1000)
    try:
        while True:
            waiter = notifier.subscribe(response_id)
            try:
                batch = await log.read(response_id, after=last)
                if not batch:
                    waited = await notifier.wait(waiter, STALL_CHECK_SECONDS)
                    if waited >= STALL_CHECK_SECONDS and await _ended_without_terminal_event(source, response_id, last):
                        yield [
                            _error_event(
                                last + 1,
                                "stream_ended",
                                f"Response {response_id} ended without its stream being completed.",
                            )
                        ]
                        return
                    continue
            finally:
                notifier.unsubscribe(response_id, waiter)
            ending = next((index for index, event in enumerate(batch) if event.type in TERMINAL_EVENT_TYPES), None)
            batch = batch if ending is None else batch[: ending + 1]
            for event in batch:
                metrics.stream_event_sent(event.written_at, opened_at_ms)
            last = batch[-1].sequence_number
            yield batch
            if ending is not None:
                if forget_at_end is not None:
                    await forget_at_end(response_id)
                return
    except Exception:  # noqa: BLE001 - the client learns that its stream broke, the log has the rest
        log_error.exception("stream of response %s broke after event %d", response_id, last)
        yield [_error_event(last + 1, "server_error", "The stream broke; resume it with `starting_after`.")]


def _error_event(sequence_number: int, code: str, message: str) -> StoredEvent:
    event = ErrorEvent(code=code, message=message).wire() | {"sequence_number": sequence_number}
    return StoredEvent(sequence_number, "error", json.dumps(event, separators=(",", ":")))


async def _ended_without_terminal_event(source: StreamSource, response_id: str, last: int) -> bool:
    """A response that is gone or finished, with nothing left to read: nothing will come."""
    response = await source.responses.get(response_id, include_unstored=True)
    if response is not None and not response.is_terminal:
        return False
    return not await source.events.read(response_id, after=last, limit=1)
