"""The unstored responses (`store: false`) a connection holds: each keeps its chain while the
connection is open, so a `response.create` on it may continue from it (as OpenAI's
connection-local cache allows); anywhere else it is unknown (`previous_response_not_found`).
They go when the connection closes, the oldest first past `most` (a crashed API's are swept
with the other unstored leftovers, `UNSTORED_RETENTION_SECONDS`)."""

from __future__ import annotations

from collections import OrderedDict

from response_service.runner import ResponseRunner
from store.responses import Responses


class HeldResponses:
    def __init__(self, runner: ResponseRunner, responses: Responses, most: int) -> None:
        self.runner = runner
        self.responses = responses
        self.most = most
        self._held: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, response_id: object) -> bool:
        return response_id in self._held

    def ids(self) -> frozenset[str]:
        return frozenset(self._held)

    async def hold(self, response_id: str) -> None:
        self._held[response_id] = None
        while len(self._held) > self.most:
            oldest, _ = self._held.popitem(last=False)
            await self._let_go(oldest)

    async def release_all(self) -> None:
        while self._held:
            oldest, _ = self._held.popitem(last=False)
            await self._let_go(oldest)

    async def _let_go(self, response_id: str) -> None:
        """Forget it once it has ended (a running one is forgotten at its end by the sweep)."""
        stored = await self.responses.get(response_id, include_unstored=True)
        if stored is not None and stored.is_terminal:
            await self.runner.forget_unstored(response_id)
