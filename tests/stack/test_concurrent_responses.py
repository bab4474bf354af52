"""A worker in the API's process takes every response the API admits at its start: none waits
in Temporal's task queue for a slot, however many run their model calls at once."""

from __future__ import annotations

import asyncio

import openai

from tests.support.prometheus import moved, scrape
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack

AT_ONCE = 130
"""More than Temporal's default of 100 workflow-task (and local-activity) slots a worker."""


async def test_more_responses_than_temporals_default_slots_all_start_on_the_worker_here(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """Each response's model call is a local activity inside its workflow's first task, so
    each holds a slot for the whole call. With Temporal's default of 100, the starts past the
    100th were not taken by the worker here: their first task waited in the task queue until
    a call ended (0.5-2.7 s at concurrency 50 in `bench`)."""
    base = stack.base_url.removesuffix("/v1")
    backend.script(model, [Reply(text="slow", delay=2.0)] * AT_ONCE)
    before = await scrape(base)
    answers = await asyncio.gather(*(sdk.responses.create(model=model, input="hi") for _ in range(AT_ONCE)))
    after = await scrape(base)
    assert [answer.status for answer in answers] == ["completed"] * AT_ONCE
    assert moved(before, after, "durable_responses_workflow_starts_total", first_task="task_queue") == 0
    assert moved(before, after, "durable_responses_workflow_starts_total", first_task="here") == AT_ONCE
