"""A worker holds a slot for every model call the API admits: none waits for another's call to
end, however many run at once (a start past the bound on tasks that work goes through Temporal's
task queue, and is taken as soon as another task begins its call)."""

from __future__ import annotations

import asyncio

import openai
from openai.types.responses import Response

from tests.support.prometheus import moved, scrape
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack
from upstream.gate import INITIAL_WINDOW
from worker.settings import Settings

AT_ONCE = 130
"""More than Temporal's default of 100 workflow-task (and local-activity) slots a worker, and
more than the workflow tasks it works on at once (`WORKER_CONCURRENT_WORKFLOW_TASKS`)."""
WARM_UP = 100


async def test_more_model_calls_than_temporals_default_slots_all_run_at_once(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """Each response's model call is a local activity inside its workflow's first task, so
    each holds a slot for the whole call. With Temporal's default of 100, the starts past the
    100th were not taken: their first task waited in the task queue until a call ended (0.5-2.7
    s at concurrency 50 in `bench`). Background responses, so each call runs in its workflow
    (a foreground one's first call begins in the API, beside the start: `activities/early_calls.py`).
    The backend holds every call until all 130 are held at once: a call that waited for another
    to end would never let them go. (The upstream gate
    lets a model it knows nothing of take 32 calls at once, and one more with each success:
    `WARM_UP` successes first let it take them all.)"""
    assert Settings().worker_concurrent_workflow_tasks < AT_ONCE
    assert INITIAL_WINDOW + WARM_UP >= AT_ONCE
    base = stack.base_url.removesuffix("/v1")
    backend.script(model, [Reply(text="warm")] * WARM_UP + [Reply(text="together")] * AT_ONCE)
    for _ in range(WARM_UP // 25):
        await asyncio.gather(*(sdk.responses.create(model=model, input="hi") for _ in range(25)))
    # Held until all are there, for as long as a loaded machine takes to start 130 workflows
    # (20 s was one call short beside stress-ng), well within a model call's own timeout
    # (INFERENCE_TIMEOUT_SECONDS, 600 s): only a call that waits for another to end never comes.
    gathering = backend.gather(model, AT_ONCE, seconds=120)
    before = await scrape(base)
    started = await asyncio.gather(
        *(sdk.responses.create(model=model, input="hi", background=True) for _ in range(AT_ONCE))
    )
    answers = [await settled(sdk, each.id) for each in started]
    after = await scrape(base)
    assert gathering.met, f"at most {gathering.most} of {AT_ONCE} model calls ran at once"
    assert [answer.status for answer in answers] == ["completed"] * AT_ONCE
    started_where = [
        moved(before, after, "durable_responses_workflow_starts_total", first_task=where)
        for where in ("here", "task_queue")
    ]
    assert sum(started_where) == AT_ONCE, started_where  # past the bound on work, a start is polled


async def settled(sdk: openai.AsyncOpenAI, response_id: str) -> Response:
    while True:
        response = await sdk.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return response
        await asyncio.sleep(0.2)
