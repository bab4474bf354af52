"""Admission: how many responses this API process has in flight, and the limit past which it
refuses new ones at the door.

A response is in flight from the moment its request arrives until its answer is complete: the
whole response for a plain request, the end of the stream for `stream: true`, the `queued`
answer for `background: true` (its workflow runs on without holding this process). Past the
limit a request is refused at once with a 503 and `retry-after` (OpenAI's SDKs retry those),
before its body is read, so a flood costs little and leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from models.errors import OverloadedError


class Admission:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0

    def enter(self) -> None:
        if self.in_flight >= self.limit:
            raise OverloadedError(
                f"This server has {self.in_flight} responses in flight, as many as it takes "
                f"(MAX_INFLIGHT_RESPONSES); retry shortly."
            )
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1

    async def until_streamed(self, stream: AsyncIterator[str]) -> AsyncIterator[str]:
        """A stream that leaves when it ends, however it ends."""
        try:
            async for frame in stream:
                yield frame
        finally:
            self.leave()
