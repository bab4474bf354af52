"""Stops an activity's work as soon as the client cancels its response.

Temporal hands a workflow its cancel request only at the next workflow task; while a
local activity runs, that is the next workflow-task heartbeat, seconds away. So the API
also records the cancel in the store, and running activities wait for it on the store's
cancel notifier (woken at once by a cancel made in this process, at its next poll for
one made in another).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

from models.errors import CancelRequestedError
from store.notifier import Notifier

T = TypeVar("T")


async def unless_cancelled(cancels: Notifier, response_id: str, work: Awaitable[T]) -> T:
    """Await `work`; if the response is cancelled first, stop it and raise
    `CancelRequestedError`."""
    cancelled = cancels.subscribe(response_id)
    working = asyncio.ensure_future(work)
    try:
        racing: set[asyncio.Future[Any]] = {working, cancelled.future}
        await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        if working.done():
            return working.result()
        working.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await working
        raise CancelRequestedError(f"response {response_id} was cancelled")
    finally:
        working.cancel()
        cancels.unsubscribe(response_id, cancelled)
