"""A model call's claim on its turn (`store/turns.py`), as the call holds it: taken (or, while
another execution holds it, waited for until its result or its end), then kept alive while the
call runs."""

from __future__ import annotations

import asyncio

from models.activity_io import InferenceInput
from store.turns import Fence, Turns, TurnStart


async def claimed(turns: Turns, fence: Fence, request: InferenceInput) -> TurnStart:
    """Claim the turn; while another execution holds it, wait for its result or its end
    (woken when it comes, or asking again at growing intervals)."""
    pause, response, settled = 0.05, request.response, turns.settled
    while True:
        waiter = settled.subscribe(response.id)
        try:
            start = await turns.claim(
                fence,
                response.previous_response_id,
                response.conversation.id if response.conversation else None,
                request.lease_seconds,
                first=request.turn == 0 or request.from_start,
            )
            if not start.held:
                return start
            await settled.wait(waiter, pause)
        finally:
            settled.unsubscribe(response.id, waiter)
        pause = min(pause * 2, 0.5)


async def kept(turns: Turns, fence: Fence, lease_seconds: float) -> None:
    """Renew the claim four times a lease until cancelled, or until it is lost (the fence then
    refuses this execution's writes)."""
    while await asyncio.sleep(lease_seconds / 4, result=True):
        if not await turns.renew(fence, lease_seconds):
            return
