"""The cluster's chores run on one worker at a time (a lease in the store), and another
worker takes them over when that one stops; on both stores."""

from __future__ import annotations

import asyncio

from store.leases import Leases
from store.opening import open_database
from tests.support.stack import EmptyStore
from worker.housekeeping import keep_house


async def test_one_worker_of_two_runs_each_chore_and_the_other_takes_over_when_it_stops(store: EmptyStore):
    db = open_database(store.url)
    await db.migrate()
    runs = {"first": 0, "second": 0}

    def chores(who: str) -> dict:
        async def sweep() -> None:
            runs[who] += 1

        return {"orphan sweep": sweep}

    stops = {"first": asyncio.Event(), "second": asyncio.Event()}
    try:
        first = asyncio.create_task(keep_house(chores("first"), 0.1, stops["first"], leases=Leases(db), holder="first"))
        await asyncio.sleep(0.05)
        second = asyncio.create_task(
            keep_house(chores("second"), 0.1, stops["second"], leases=Leases(db), holder="second")
        )
        await asyncio.sleep(1.0)
        assert runs["first"] >= 5 and runs["second"] == 0, runs
        stops["first"].set()
        await first
        await asyncio.sleep(1.0)  # its lease (2.5 rounds) runs out; the second takes it
        assert runs["second"] >= 3, runs
        stops["second"].set()
        await second
    finally:
        await db.close()
