"""One run of a piece of work per key (`activities/single_flight.py`): work started ahead of its
caller gives its outcome to exactly one caller, whenever that caller comes; a second caller
after it does the work afresh (the turn's store says what happened)."""

from __future__ import annotations

import asyncio

import pytest

from activities.single_flight import SingleFlight


class Flaky:
    """Work that fails each time it runs, counting its runs."""

    def __init__(self) -> None:
        self.runs = 0

    async def __call__(self) -> str:
        self.runs += 1
        raise RuntimeError(f"run {self.runs} failed")


async def test_an_early_outcome_is_taken_once_when_its_caller_comes_after_it() -> None:
    flight, work = SingleFlight(), Flaky()
    started = flight.start("turn", work, kept=True)
    await asyncio.wait([started])
    with pytest.raises(RuntimeError, match="run 1"):
        await flight.run("turn", work)
    with pytest.raises(RuntimeError, match="run 2"):  # a retry of the caller: its own attempt
        await flight.run("turn", work)
    assert work.runs == 2


async def test_an_early_outcome_is_taken_once_when_its_caller_joins_it_running() -> None:
    flight, work, release = SingleFlight(), Flaky(), asyncio.Event()

    async def slow() -> str:
        await release.wait()
        return await work()

    flight.start("turn", slow, kept=True)
    caller = asyncio.ensure_future(flight.run("turn", slow))
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(RuntimeError, match="run 1"):
        await caller
    with pytest.raises(RuntimeError, match="run 2"):
        await flight.run("turn", work)


async def test_an_early_outcome_is_taken_once_when_its_caller_comes_as_it_ends() -> None:
    """The caller comes after the work ended but before the work's done callbacks ran (they
    run a loop step later): the outcome is still this caller's alone. Before the fix the
    callback kept it afterwards and the caller's retry was handed the same failure again,
    which spent a second attempt of the turn without asking the model."""
    flight, work = SingleFlight(), Flaky()
    started = flight.start("turn", work, kept=True)
    await asyncio.sleep(0)  # the work's step runs before this one: it ends, its callbacks queued
    assert started.done()
    with pytest.raises(RuntimeError, match="run 1"):
        await flight.run("turn", work)
    await asyncio.sleep(0)  # the done callbacks run
    with pytest.raises(RuntimeError, match="run 2"):
        await flight.run("turn", work)
    assert work.runs == 2


async def test_a_caller_evicted_while_joined_leaves_the_outcome_to_the_one_in_its_place() -> None:
    flight, work, release = SingleFlight(), Flaky(), asyncio.Event()

    async def slow() -> str:
        await release.wait()
        return await work()

    flight.start("turn", slow, kept=True)
    evicted = asyncio.ensure_future(flight.run("turn", slow))
    await asyncio.sleep(0)
    evicted.cancel()
    with pytest.raises(asyncio.CancelledError):
        await evicted
    release.set()
    await asyncio.sleep(0.01)
    with pytest.raises(RuntimeError, match="run 1"):
        await flight.run("turn", work)
    assert work.runs == 1


async def test_forgotten_early_work_gives_its_outcome_to_nobody() -> None:
    flight, work = SingleFlight(), Flaky()
    started = flight.start("turn", work, kept=True)
    flight.forget("turn")
    await asyncio.wait([started])
    with pytest.raises(RuntimeError, match="run 2"):
        await flight.run("turn", work)
