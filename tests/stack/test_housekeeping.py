"""The cluster's chores run on one worker at a time (a lease in the store), and another
worker takes them over when that one stops; on both stores."""

from __future__ import annotations

import asyncio

from store.leases import Leases
from store.opening import open_database
from tests.support.stack import EmptyStore
from tests.support.waiting import eventually
from worker.housekeeping import keep_house

ROUND = 0.4
"""Seconds a round: a holder renews its lease (2.5 rounds) in time even on a loaded machine."""


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
        # Each step waits for what it needs to have happened (a run, five more), however slow
        # the machine: the first has its lease before the second starts.
        first = asyncio.create_task(
            keep_house(chores("first"), ROUND, stops["first"], leases=Leases(db), holder="first")
        )
        await eventually(lambda: runs["first"] >= 1, "the first worker's first run")
        second = asyncio.create_task(
            keep_house(chores("second"), ROUND, stops["second"], leases=Leases(db), holder="second")
        )
        await eventually(lambda: runs["first"] >= 6, "five more runs of the first worker")
        assert runs["second"] == 0, runs
        stops["first"].set()
        await first
        # its lease (2.5 rounds) runs out; the second takes it
        await eventually(lambda: runs["second"] >= 3, "the second worker's runs once the first stopped")
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
        await eventually(lambda: checks >= 3, "three rounds")
        assert runs == 0
        assert await leases_held() == []
        work.set()
        await eventually(lambda: runs >= 3, "three rounds with work")
        assert [tuple(row) for row in await leases_held()] == [("deliveries", "one")]
        stop.set()
        await keeping
    finally:
        await db.close()
