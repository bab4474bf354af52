"""`worker/slots.py` as Temporal's core drives it: a poller is given a slot only while fewer
tasks work than the bound; a task waiting on its model call does not work, a poller's idle slot
does not either, and a slot freed (or a call begun) wakes a waiting poller, also when core
calls from a thread of its own."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

from temporalio.worker import SlotPermit

from worker.slots import ModelCallSlots, SlotCounts, WorkflowTaskSlots


@dataclass
class Context:
    """What core passes (its fields that the suppliers read)."""

    permit: SlotPermit
    slot_info: object | None = None
    slot_type: str = "workflow"
    is_sticky: bool = False


def suppliers(most: int, working: int) -> tuple[SlotCounts, WorkflowTaskSlots, ModelCallSlots]:
    counts = SlotCounts(most, working)
    return counts, WorkflowTaskSlots(counts), ModelCallSlots(counts)


async def reserved(supplier: WorkflowTaskSlots | ModelCallSlots) -> SlotPermit:
    return await supplier.reserve_slot(Context(SlotPermit()))  # type: ignore[arg-type]


async def test_a_poller_waits_while_as_many_tasks_work_as_the_bound():
    counts, tasks, _ = suppliers(most=10, working=2)
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
    counts, tasks, calls = suppliers(most=10, working=1)
    task = await reserved(tasks)
    tasks.mark_slot_used(Context(task))  # type: ignore[arg-type]
    waiting = asyncio.ensure_future(reserved(tasks))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    call = await reserved(calls)
    marked = threading.Thread(target=calls.mark_slot_used, args=(Context(call),))  # core's own thread
    marked.start()
    marked.join()
    await asyncio.wait_for(waiting, 1)
    calls.release_slot(Context(call, slot_info=object()))  # type: ignore[arg-type]
    assert counts.calls == 0 and counts.calls_given == 0


async def test_starts_at_once_are_each_counted_before_any_is_used():
    counts, tasks, _ = suppliers(most=100, working=3)
    given = [tasks.try_reserve_slot(Context(SlotPermit())) for _ in range(5)]  # type: ignore[arg-type]
    assert sum(permit is not None for permit in given) == 3
    assert counts.tasks_used == 3


async def test_no_more_slots_are_given_than_the_most():
    counts, tasks, calls = suppliers(most=2, working=2)
    for _ in range(2):
        permit = await reserved(tasks)
        tasks.mark_slot_used(Context(permit))  # type: ignore[arg-type]
        calls.mark_slot_used(Context(await reserved(calls)))  # type: ignore[arg-type]
    assert tasks.try_reserve_slot(Context(SlotPermit())) is None  # type: ignore[arg-type]
    assert calls.try_reserve_slot(Context(SlotPermit())) is None  # type: ignore[arg-type]
    assert counts.tasks == 2 and counts.calls == 2
