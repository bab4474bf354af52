"""Which tool calls were sent to their server. Temporal runs an activity at least once; a
call that must run at most once claims its row here just before it is sent, and an attempt
that finds the row taken knows an earlier attempt may already have run it."""

from __future__ import annotations

import time

from store.database import Database


class ToolDispatches:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def claim(self, response_id: str, call_id: str) -> bool:
        """True for the first attempt to send this call; False once any attempt has."""
        async with self.db.write() as transaction:
            claimed = await transaction.run(
                "INSERT INTO tool_dispatches (response_id, call_id, sent_at) VALUES (:response_id, :call_id, :now) "
                "ON CONFLICT (response_id, call_id) DO NOTHING",
                response_id=response_id,
                call_id=call_id,
                now=time.time(),
            )
        return claimed == 1
