"""Admission: how many responses this API process has in flight, and the limit past which it
refuses new ones at the door.

A response is in flight from the moment its request arrives until its answer is complete: the
whole response for a plain request, the end of the stream for `stream: true`, the `queued`
answer for `background: true` (its workflow runs on without holding this process). Past the
limit a request is refused at once with a 503 and `retry-after` (OpenAI's SDKs retry those),
before its body is read, so a flood costs little and leaves nothing behind.

When the process stops, open requests get the grace period to finish; just before it ends
(`closing`), a request still waiting for its response is answered with a 503 that names the
response, which carries on and can be retrieved, instead of being cut off with a 500.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from models.errors import OverloadedError, StoppingError

T = TypeVar("T")


class Admission:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        self.closing = asyncio.Event()

    def enter(self) -> None:
        if self.in_flight >= self.limit:
            raise OverloadedError(
                f"This server has {self.in_flight} responses in flight, as many as it takes "
                f"(MAX_INFLIGHT_RESPONSES); retry shortly."
            )
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1

    async def unless_closing(self, waited: Awaitable[T], response_id: str, *, stored: bool) -> T:
        """What `waited` gives, or, if this process stops first, a 503 that says where the
        response can be had."""
        waiting = asyncio.ensure_future(waited)
        closing = asyncio.ensure_future(self.closing.wait())
        try:
            await asyncio.wait({waiting, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closing.cancel()
            if not waiting.done():
                waiting.cancel()
        if waiting.done() and not waiting.cancelled():
            return waiting.result()
        where = (
            f"; it carries on, and GET /v1/responses/{response_id} will have it" if stored else "; retry the request"
        )
        raise StoppingError(f"This server is stopping before response {response_id} ended{where}.")
