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


async def test_a_chore_with_nothing_due_takes_no_lease_and_writes_nothing(store: EmptyStore):
    """An idle dispatcher polled each second must not write its lease each second: a write
    (and a checkpoint) a second kept an idle `dev` at several % of a core."""
    db = open_database(store.url)
    await db.migrate()
    runs, checks, work = 0, 0, asyncio.Event()

    async def deliver() -> None:
        nonlocal runs
        runs += 1

    async def due() -> bool:
        nonlocal checks
        checks += 1
        return work.is_set()

    async def leases_held() -> list:
        async with db.read() as transaction:
            return await transaction.all("SELECT name, holder FROM chore_leases")

    stop = asyncio.Event()
    try:
        keeping = asyncio.create_task(
            keep_house({"deliveries": deliver}, 0.05, stop, leases=Leases(db), holder="one", due={"deliveries": due})
        )
        await asyncio.sleep(0.5)
        assert checks >= 3 and runs == 0, (checks, runs)
        assert await leases_held() == []
        work.set()
        await asyncio.sleep(0.5)
        assert runs >= 3
        assert [tuple(row) for row in await leases_held()] == [("deliveries", "one")]
        stop.set()
        await keeping
    finally:
        await db.close()
