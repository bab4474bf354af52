"""Leases in the store: which process runs a chore that one process in the cluster should
run at a time (`worker/housekeeping.py`). A lease is taken when it is free or has run out,
and renewed by its holder; a holder that dies loses it when it runs out."""

from __future__ import annotations

import time
from collections.abc import Callable

from store.database import Database


class Leases:
    def __init__(self, db: Database, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.clock = clock

    async def take(self, name: str, holder: str, seconds: float) -> bool:
        """Whether `holder` holds the lease `name` for the next `seconds` (taken or renewed)."""
        now = self.clock()
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO chore_leases (name, holder, until) VALUES (:name, :holder, :until) "
                "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until "
                "WHERE chore_leases.until < :now OR chore_leases.holder = excluded.holder",
                name=name,
                holder=holder,
                until=now + seconds,
                now=now,
            )
            held = await transaction.value("SELECT holder FROM chore_leases WHERE name = :name", name=name)
            return bool(held == holder)
