"""The baseline patch (`workflows/patches.py`) on a real Temporal server: a run started by code
from before it, and continued by a worker with `patches.taken`, goes on asking each patch (and
replays); a run started without the baseline in its memo (by the release before the memo)
records the baseline's marker alone; a run started with it records no marker, and its run
continued as new neither; a patch its memo's baseline does not fold is asked by its own
marker, and one the newer baseline folds by none.

The two workflow classes here stand for one workflow type at two deploys: the old one asks
`workflow.patched` as the code did before the baseline, the new one `patches.taken`, around a
wait for a signal where the old worker stops and the new one takes the run over.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker

from tests.support.histories import baseline_in_memo, patches_in
from tests.support.waiting import eventually
from workflows import patches

TYPE = "BaselineProbe"
ASKED_BEFORE_THE_WAIT = patches.STATE_SHOWN_IN_TEMPORAL
ASKED_AFTER_THE_WAIT = patches.RESULT_IS_ID_AND_STATUS
RESULT_SECONDS = 30
"""A run the new code cannot replay retries its task forever: the test fails instead."""


class _Probe:
    """Asks one patch, waits for the `go` signal, asks another: the worker changes at the wait."""

    def __init__(self) -> None:
        self.go_on = False

    @workflow.signal
    def go(self) -> None:
        self.go_on = True

    async def _around_the_wait(self, ask: Callable[[str], bool]) -> list[bool]:
        taken = [ask(ASKED_BEFORE_THE_WAIT)]
        await workflow.wait_condition(lambda: self.go_on)
        taken.append(ask(ASKED_AFTER_THE_WAIT))
        return taken


@workflow.defn(name=TYPE)
class BeforeTheBaseline(_Probe):
    @workflow.run
    async def run(self) -> list[bool]:
        return await self._around_the_wait(workflow.patched)


@workflow.defn(name=TYPE)
class SinceTheBaseline(_Probe):
    @workflow.run
    async def run(self, continue_first: bool = False) -> list[bool]:
        if continue_first:  # one patch asked, then the next run (its memo carried on) does the rest
            patches.taken(ASKED_BEFORE_THE_WAIT)
            workflow.continue_as_new(False)
        return await self._around_the_wait(patches.taken)


def _worker(client: Client, task_queue: str, definition: type) -> Worker:
    # No sticky cache: the next worker gets each task (and the whole history) at once.
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[definition],
        workflow_runner=UnsandboxedWorkflowRunner(),
        max_cached_workflows=0,
    )


async def test_a_run_from_before_the_baseline_goes_on_asking_each_patch(temporal_env: WorkflowEnvironment) -> None:
    client, task_queue = temporal_env.client, f"baseline-{uuid.uuid4().hex[:8]}"
    async with _worker(client, task_queue, BeforeTheBaseline):
        handle = await client.start_workflow(TYPE, id=f"old-{uuid.uuid4().hex}", task_queue=task_queue)
        await _until_waiting(handle)
    async with _worker(client, task_queue, SinceTheBaseline):
        await handle.signal("go")
        assert await asyncio.wait_for(handle.result(), RESULT_SECONDS) == [True, True]
    history = await handle.fetch_history()
    # The new code asked the patch it met after the wait as the old run's own marker, not the baseline.
    assert patches_in(history) == {ASKED_BEFORE_THE_WAIT, ASKED_AFTER_THE_WAIT}
    assert (await _replayer().replay_workflow(history)).replay_failure is None


async def test_a_run_started_without_the_memo_records_the_baseline_marker_alone(
    temporal_env: WorkflowEnvironment,
) -> None:
    client, task_queue = temporal_env.client, f"baseline-{uuid.uuid4().hex[:8]}"
    async with _worker(client, task_queue, SinceTheBaseline):
        handle = await client.start_workflow(TYPE, id=f"new-{uuid.uuid4().hex}", task_queue=task_queue)
        await _until_waiting(handle)
        await handle.signal("go")
        assert await asyncio.wait_for(handle.result(), RESULT_SECONDS) == [True, True]
    history = await handle.fetch_history()
    assert patches_in(history) == {patches.BASELINE_2026_11_27}
    assert (await _replayer().replay_workflow(history)).replay_failure is None


async def test_a_run_started_with_the_memo_records_no_marker_nor_does_its_next_run(
    temporal_env: WorkflowEnvironment,
) -> None:
    client, task_queue = temporal_env.client, f"baseline-{uuid.uuid4().hex[:8]}"
    async with _worker(client, task_queue, SinceTheBaseline):
        started = await client.start_workflow(
            TYPE, True, id=f"memo-{uuid.uuid4().hex}", task_queue=task_queue, memo=patches.start_memo()
        )
        latest = client.get_workflow_handle(started.id)
        first_run = started.first_execution_run_id
        await eventually(lambda: _next_run_started(latest, first_run), "the run to continue as new")
        await _until_waiting(latest)
        await latest.signal("go")
        assert await asyncio.wait_for(latest.result(), RESULT_SECONDS) == [True, True]
    first = await client.get_workflow_handle(started.id, run_id=first_run).fetch_history()
    history = await latest.fetch_history()
    assert first.events[-1].event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
    for run in (first, history):
        assert baseline_in_memo(run) == patches.start_memo()[patches.BASELINE_MEMO]
        assert patches_in(run) == set()
        assert (await _replayer().replay_workflow(run)).replay_failure is None


LATER = "BaselineLaterPatch"


@workflow.defn(name=LATER)
class AsksALaterPatch:
    """Asks a patch the first baseline does not fold, and one it does."""

    @workflow.run
    async def run(self) -> list[bool]:
        return [patches.taken(patches.ENDS_IN_THE_CALL), patches.taken(ASKED_BEFORE_THE_WAIT)]


@pytest.mark.parametrize(
    ("baseline", "markers"),
    [
        (patches.BASELINE_2026_11_27, {patches.ENDS_IN_THE_CALL}),
        (patches.BASELINE_2026_11_27_2, set()),
    ],
)
async def test_a_patch_a_run_s_baseline_does_not_fold_is_asked_by_its_marker(
    temporal_env: WorkflowEnvironment, baseline: str, markers: set[str]
) -> None:
    """A run started under the first baseline's memo (by the deploy before the next) asks a
    later patch itself, and only that one; a run under the newer memo asks none."""
    client, task_queue = temporal_env.client, f"baseline-{uuid.uuid4().hex[:8]}"
    async with _worker(client, task_queue, AsksALaterPatch):
        handle = await client.start_workflow(
            LATER,
            id=f"later-{uuid.uuid4().hex}",
            task_queue=task_queue,
            memo={patches.BASELINE_MEMO: baseline},
        )
        assert await asyncio.wait_for(handle.result(), RESULT_SECONDS) == [True, True]
    history = await handle.fetch_history()
    assert patches_in(history) == markers
    replayer = Replayer(workflows=[AsksALaterPatch], workflow_runner=UnsandboxedWorkflowRunner())
    assert (await replayer.replay_workflow(history)).replay_failure is None


def _replayer() -> Replayer:
    return Replayer(workflows=[SinceTheBaseline], workflow_runner=UnsandboxedWorkflowRunner())


async def _next_run_started(handle: WorkflowHandle[Any, Any], first_run_id: str | None) -> bool:
    return (await handle.describe()).run_id != first_run_id


async def _until_waiting(handle: WorkflowHandle[Any, Any]) -> None:
    """Until the run's first workflow task is in its history (it waits for the signal)."""

    async def completed_a_task() -> bool:
        async for event in handle.fetch_history_events():
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                return True
        return False

    await eventually(completed_a_task, "the run's first workflow task to complete")
