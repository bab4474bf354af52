"""Final responses handed over in this process: from the activity that writes a response's
end to the request that waits for it, when the workflow ran on this process's worker (an
eager start). The handover follows the store's commit, so a client is never given a response
the store does not hold. A request whose response ended elsewhere learns it from Temporal.
"""

from __future__ import annotations

import asyncio

from models.responses import Response


class Outcomes:
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[Response]] = {}

    def expect(self, response_id: str) -> asyncio.Future[Response]:
        """Register before the workflow starts, so an end that comes at once is not missed."""
        future = self._waiting.get(response_id)
        if future is None:
            future = self._waiting[response_id] = asyncio.get_running_loop().create_future()
        return future

    def forget(self, response_id: str) -> None:
        self._waiting.pop(response_id, None)

    def publish(self, response: Response) -> None:
        future = self._waiting.pop(response.id, None)
        if future is not None and not future.done():
            future.set_result(response)
