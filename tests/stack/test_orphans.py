"""A response whose API server died between storing it and starting its workflow is
started by a worker's sweep, once, and completes."""

from __future__ import annotations

import time

from activities.handover import Outcomes
from http_plumbing.body import Limits
from models.events import opening_events
from response_service.preparation import prepare
from response_service.runner import ResponseRunner
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack
from tests.support.waiting import eventually, until_terminal
from tests.support.webhook_receiver import Receiver
from worker.roles import opened_store, orphan_sweeper


async def test_stored_but_never_started_response_is_started_by_the_sweep(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str, receiver: Receiver
):
    backend.script(f"{model}-slow", [Reply(text="slowly", delay=30)])
    async with running_stack(temporal_address, backend, store) as stack, opened_store(stack.settings) as repository:
        async with stack.sdk() as client:
            finished = await client.responses.create(model=model, input="already done")
            # What the API writes before it starts the workflow; then it "dies".
            # Its project's webhook endpoint still hears of it.
            async with stack.sdk() as sdk:
                endpoint = await sdk.webhooks.create(
                    name="orphans", url=receiver.url, event_types=["response.completed"]
                )
            prepared = await prepare({"model": model, "input": "orphan", "background": True}, repository, Limits())
            orphan = prepared.response
            await repository.responses.create(orphan, prepared.items, opening_events(orphan))

            runner = ResponseRunner(
                stack.client,
                stack.settings.task_queue,
                stack.settings.execution,
                responses=repository.responses,
                history_deletions=repository.history_deletions,
                local_worker=False,
                outcomes=Outcomes(),
            )
            sweeper = orphan_sweeper(repository, runner, grace_seconds=0)
            waiting = await client.responses.create(model=f"{model}-slow", input="waits", background=True)
            assert await sweeper.sweep() == [orphan.id]
            # Both are marked now: the sweep never looks at them again (it costs what it finds).
            assert {
                response.id for response in await repository.starts.unconfirmed_created_between(0, time.time())
            }.isdisjoint({orphan.id, waiting.id})
            final = await until_terminal(client, orphan.id)
            assert await sweeper.sweep() == [], "a response must never be started twice"
            await client.responses.cancel(waiting.id)
            events = [event async for event in await client.responses.retrieve(orphan.id, stream=True)]
            [delivery] = await eventually(lambda: receiver.of(orphan.id), "the orphan's completed webhook")
            await client.webhooks.delete(endpoint.id)
    assert delivery.event["type"] == "response.completed"
    assert final.status == "completed" and final.output_text == "echo: orphan"
    assert [event.type for event in events][:3] == ["response.created", "response.queued", "response.in_progress"]
    assert events[-1].type == "response.completed"
    assert finished.id != orphan.id and len(backend.requests(model)) == 2
