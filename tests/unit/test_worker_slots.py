"""`worker/slots.py` as Temporal's core drives it: a poller is given a slot only while fewer
tasks work than the bound; a task waiting on its model call does not work, a poller's idle slot
does not either, and a slot freed (or a call begun) wakes a waiting poller, also when core
calls from a thread of its own."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from dataclasses import dataclass
from typing import Any

from temporalio.testing import ActivityEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, SlotPermit

from worker.slots import FINISHED_WINDOW, WAIT_SECONDS, CallCounting, SlotCounts, WorkflowTaskSlots


@dataclass
class Context:
    """What core passes (its fields that the suppliers read)."""

    permit: SlotPermit
    slot_info: object | None = None
    slot_type: str = "workflow"
    is_sticky: bool = False


def suppliers(most: int, working: int) -> tuple[SlotCounts, WorkflowTaskSlots]:
    counts = SlotCounts(most, working)
    return counts, WorkflowTaskSlots(counts)


async def reserved(supplier: WorkflowTaskSlots) -> SlotPermit:
    return await supplier.reserve_slot(Context(SlotPermit()))  # type: ignore[arg-type]


async def test_a_poller_waits_while_as_many_tasks_work_as_the_bound():
    counts, tasks = suppliers(most=10, working=2)
    permits = [await reserved(tasks) for _ in range(3)]  # idle pollers' slots: no work yet
    for permit in permits[:2]:
        tasks.mark_slot_used(Context(permit))  # type: ignore[arg-type]
    waiting = asyncio.ensure_future(reserved(tasks))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    assert tasks.try_reserve_slot(Context(SlotPermit())) is None  # nor an eager start  # type: ignore[arg-type]
    tasks.release_slot(Context(permits[0], slot_info=object()))  # type: ignore[arg-type]
    await asyncio.wait_for(waiting, 1)
    assert counts.tasks == 3 and counts.tasks_used == 1


async def test_a_task_waiting_on_its_model_call_makes_room_for_another():
    loop = asyncio.get_running_loop()
    loop.set_debug(True)  # a wake from another thread that is not thread-safe raises
    try:
        await a_call_running_wakes_a_waiting_poller()
    finally:
        loop.set_debug(False)


async def a_call_running_wakes_a_waiting_poller() -> None:
    counts, tasks = suppliers(most=10, working=1)
    task = await reserved(tasks)
    tasks.mark_slot_used(Context(task))  # type: ignore[arg-type]
    waiting = asyncio.ensure_future(reserved(tasks))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    began = threading.Timer(0.05, counts.call_began, args=("run-1",))  # another thread, while the loop runs
    began.start()
    await asyncio.wait_for(waiting, 1)
    counts.call_ended("run-1")
    assert not counts.calls


async def test_a_run_waiting_on_several_calls_makes_room_for_one_task_only():
    counts, tasks = suppliers(most=10, working=2)
    for _ in range(2):
        tasks.mark_slot_used(Context(await reserved(tasks)))  # type: ignore[arg-type]
    for _ in range(3):
        counts.call_began("run-1")  # a turn listing three MCP servers at once
    assert tasks.try_reserve_slot(Context(SlotPermit())) is not None  # type: ignore[arg-type]  # one waits: room for one
    assert tasks.try_reserve_slot(Context(SlotPermit())) is None  # type: ignore[arg-type]  # not for three
    counts.call_began("run-2")
    assert tasks.try_reserve_slot(Context(SlotPermit())) is not None  # type: ignore[arg-type]
    counts.call_ended("run-2")
    for _ in range(3):
        counts.call_ended("run-1")
    assert not counts.calls


async def test_a_cancelled_reservation_takes_nothing():
    counts, tasks = suppliers(most=10, working=1)
    tasks.mark_slot_used(Context(await reserved(tasks)))  # type: ignore[arg-type]
    waiting = asyncio.ensure_future(reserved(tasks))
    await asyncio.sleep(0.01)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    assert counts.tasks == 1 and counts.tasks_used == 1 and not counts._waiting


class Seen(ActivityInboundInterceptor):
    """The end of the chain: what the counts were while the activity ran."""

    def __init__(self, counts: SlotCounts) -> None:
        self.counts = counts
        self.runs: dict[str, int] = {}

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        self.runs = dict(self.counts.calls)


async def test_a_local_activity_is_counted_under_its_run_while_it_runs():
    counts = SlotCounts(10, 1)
    seen = Seen(counts)
    counted = CallCounting(counts).intercept_activity(seen)
    call = ExecuteActivityInput(fn=lambda: None, args=[], executor=None, headers={})
    local = ActivityEnvironment()
    local.info = dataclasses.replace(ActivityEnvironment.default_info(), is_local=True, workflow_run_id="run-7")
    await local.run(counted.execute_activity, call)
    assert seen.runs == {"run-7": 1} and not counts.calls
    remote = ActivityEnvironment()
    remote.info = dataclasses.replace(ActivityEnvironment.default_info(), is_local=False, workflow_run_id="run-7")
    await remote.run(counted.execute_activity, call)
    assert seen.runs == {}  # a queued activity holds no workflow task open


async def test_starts_at_once_are_each_counted_before_any_is_used():
    counts, tasks = suppliers(most=100, working=3)
    given = [tasks.try_reserve_slot(Context(SlotPermit())) for _ in range(5)]  # type: ignore[arg-type]
    assert sum(permit is not None for permit in given) == 3
    assert counts.tasks_used == 3


async def test_no_more_slots_are_given_than_the_most():
    counts, tasks = suppliers(most=2, working=2)
    for run in ("run-1", "run-2"):
        permit = await reserved(tasks)
        tasks.mark_slot_used(Context(permit))  # type: ignore[arg-type]
        counts.call_began(run)  # both wait: none works
    assert tasks.try_reserve_slot(Context(SlotPermit())) is None  # type: ignore[arg-type]
    assert counts.tasks == 2


async def test_a_worker_that_finishes_tasks_fast_may_work_on_more_at_once():
    now = [0.0]
    counts = SlotCounts(most=1000, working=2, clock=lambda: now[0])
    tasks = WorkflowTaskSlots(counts)

    def take() -> SlotPermit | None:
        return tasks.try_reserve_slot(Context(SlotPermit()))  # type: ignore[arg-type]

    def finish(permits: list[SlotPermit | None]) -> None:
        for permit in permits:
            assert permit is not None
            tasks.release_slot(Context(permit))

    held = [take() for _ in range(3)]
    assert held[2] is None, "nothing finished yet: the floor"
    finish(held[:2])
    for _ in range(19):  # 40 finished within the window
        finish([take(), take()])
    pace = int(40 * WAIT_SECONDS / FINISHED_WINDOW)
    assert pace > 2
    held = [take() for _ in range(pace + 1)]
    assert None not in held[:pace] and held[pace] is None, "as many as it finishes in WAIT_SECONDS"
    finish(held[:pace])
    now[0] += FINISHED_WINDOW + 0.1  # a pace of long ago is forgotten: the floor again
    held = [take() for _ in range(3)]
    assert None not in held[:2] and held[2] is None
    finish(held[:2])
    assert counts.tasks == 0 and counts.tasks_used == 0
