"""Webhooks: a background response's end and its approval waits reach every configured
endpoint, signed as OpenAI signs (the official SDK unwraps and verifies them), delivered
durably with the same `webhook-id` on every attempt, never in the response's way, through
the egress policy, and with no URL or secret in Temporal's history."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import openai
import pytest
from openai.types.webhooks import (
    ResponseCancelledWebhookEvent,
    ResponseCompletedWebhookEvent,
    ResponseFailedWebhookEvent,
    ResponseIncompleteWebhookEvent,
)

from models.webhooks import WebhookDeliveryInput, WebhookDeliveryResult, WebhookEvent, endpoint_id
from tests.support import store_probe
from tests.support.histories import decoded_history, keep_recording, replayer
from tests.support.mcp_servers import McpTestServer
from tests.support.processes import free_port, kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import TEST_EXECUTION, EmptyStore, Stack, running_stack
from tests.support.waiting import eventually, until_awaiting_approval, until_requested, until_terminal
from tests.support.webhook_receiver import FAST, SECRET, Receiver, attempts


async def outbox_rows(stack: Stack) -> list:
    return await store_probe.rows(stack.settings.database_url, "SELECT * FROM webhook_outbox")


@contextlib.asynccontextmanager
async def webhook_stack(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, urls: list[str], **options: object
) -> AsyncIterator[Stack]:
    policy = FAST.model_copy(update={"endpoints": [endpoint_id(url) for url in urls]})
    async with running_stack(
        temporal_address,
        backend,
        store,
        webhook_urls=urls,
        webhook_secret=SECRET,
        execution=TEST_EXECUTION.model_copy(update={"webhooks": policy}),
        **options,
    ) as stack:
        yield stack


async def test_a_background_responses_end_is_an_event_the_openai_sdk_unwraps(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, receiver: Receiver, model: str
):
    backend.script(f"{model}-ok", [Reply(text="done")])
    backend.script(f"{model}-bad", [Reply(status=400, error_message="no such thing")])
    backend.script(f"{model}-cut", [Reply(text="cut short", finish_reason="length")])
    backend.script(f"{model}-slow", [Reply(text="never", delay=60)])
    async with webhook_stack(temporal_address, backend, store, [receiver.url]) as stack, stack.sdk() as sdk:
        ended = {
            "completed": (await sdk.responses.create(model=f"{model}-ok", input="hi", background=True)).id,
            "failed": (await sdk.responses.create(model=f"{model}-bad", input="hi", background=True)).id,
            "incomplete": (await sdk.responses.create(model=f"{model}-cut", input="hi", background=True)).id,
        }
        slow = await sdk.responses.create(model=f"{model}-slow", input="hi", background=True)
        await until_requested(backend, f"{model}-slow")
        ended["cancelled"] = (await sdk.responses.cancel(slow.id)).id
        synchronous = (await sdk.responses.create(model=f"{model}-ok", input="hi")).id  # OpenAI sends none
        for response_id in ended.values():
            await eventually(lambda response_id=response_id: receiver.of(response_id), f"the event of {response_id}")
        await asyncio.sleep(0.5)
    client = openai.OpenAI(api_key="unused", webhook_secret=SECRET)
    expected = {
        "completed": ResponseCompletedWebhookEvent,
        "failed": ResponseFailedWebhookEvent,
        "incomplete": ResponseIncompleteWebhookEvent,
        "cancelled": ResponseCancelledWebhookEvent,
    }
    for status, response_id in ended.items():
        [delivery] = receiver.of(response_id)
        event = client.webhooks.unwrap(delivery.body, delivery.headers)
        assert isinstance(event, expected[status]), (status, event)
        assert event.type == f"response.{status}" and event.data.id == response_id and event.object == "event"
        assert event.id.startswith("evt_") and delivery.headers["webhook-id"] == event.id
        assert delivery.headers["content-type"] == "application/json"
    assert receiver.of(synchronous) == []
    with pytest.raises(openai.InvalidWebhookSignatureError):  # and a forged one is refused
        delivery = receiver.of(ended["completed"])[0]
        client.webhooks.unwrap(delivery.body.replace("event", "evenT"), delivery.headers)


async def test_a_response_waiting_for_approval_sends_action_required(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    receiver: Receiver,
    mcp_server: McpTestServer,
    model: str,
):
    backend.script(model, [Reply(tool_calls=[("delete_file", {"path": "/tmp/x"})]), Reply(text="done")])
    tool = {"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "always"}
    async with webhook_stack(temporal_address, backend, store, [receiver.url]) as stack, stack.sdk() as sdk:
        response = await sdk.responses.create(model=model, input="delete it", tools=[tool], background=True)
        request = (await until_awaiting_approval(sdk, response.id)).output[-1]
        await eventually(lambda: receiver.of(response.id), "the action_required event")
        [delivery] = receiver.of(response.id)
        openai.OpenAI(api_key="unused").webhooks.verify_signature(delivery.body, delivery.headers, secret=SECRET)
        assert delivery.event["type"] == "response.action_required"
        assert delivery.event["data"] == {
            "id": response.id,
            "required_action": {"type": "mcp_approval_request", "approval_request_id": request.id},
        }
        async with stack.http() as http:
            decided = await http.post(
                f"/v1/responses/{response.id}/approvals", json={"approval_request_id": request.id, "approve": True}
            )
            assert decided.status_code == 200
        assert (await until_terminal(sdk, response.id)).status == "completed"
        await eventually(lambda: len(receiver.of(response.id)) == 2, "the completed event")
        # The response's workflow, with both events put in the outbox from it, replays as it ran.
        history = await stack.client.get_workflow_handle(response.id).fetch_history()
        assert (await replayer().replay_workflow(history)).replay_failure is None
        await keep_recording("webhooks_queued", stack.client, response.id)
        started = [
            event
            for event in history.events
            if event.HasField("start_child_workflow_execution_initiated_event_attributes")
        ]
        assert started == [], "a workflow an event: the outbox holds them"
        await eventually(lambda: _empty(outbox_rows(stack)), "the outbox to be empty once delivered")
    assert [delivery.event["type"] for delivery in receiver.of(response.id)] == [
        "response.action_required",
        "response.completed",
    ]


@pytest.mark.one_store
async def test_a_delivery_is_tried_again_with_the_same_id_and_never_holds_up_the_response(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    failing = Receiver(failing=3).start()
    working = Receiver().start()  # a second endpoint gets its own delivery, at once
    try:
        backend.script(model, [Reply(text="done")])
        async with (
            webhook_stack(temporal_address, backend, store, [failing.url, working.url]) as stack,
            stack.sdk() as sdk,
        ):
            response = await sdk.responses.create(model=model, input="hi", background=True)
            waiting = await eventually(lambda: outbox_rows(stack), "the events in the outbox")
            assert (await until_terminal(sdk, response.id)).status == "completed"
            await eventually(lambda: working.of(response.id), "the working endpoint's delivery")
            await eventually(lambda: len(failing.of(response.id)) == 4, "the fourth attempt", seconds=20)
            # Decoded, as the codec endpoint shows them: not just ciphertext.
            history = [event.SerializeToString() for event in (await decoded_history(stack.client, response.id)).events]
            await eventually(lambda: _empty(outbox_rows(stack)), "the outbox to be empty once delivered")
    finally:
        failing.stop()
        working.stop()
    attempts = failing.of(response.id)
    assert len({attempt.headers["webhook-id"] for attempt in attempts}) == 1
    # The same event to each endpoint, each delivered on its own.
    assert working.of(response.id)[0].body == attempts[0].body and len(working.of(response.id)) == 1
    # Neither the URLs nor the secret are in the history or the outbox: both name endpoints by id.
    assert any(response.id.encode() in event for event in history)  # the search sees payloads' contents
    assert "response.completed" in repr(waiting)
    for url in (failing.url, working.url, SECRET, SECRET.removeprefix("whsec_")):
        assert not any(url.encode() in event for event in history), url
        assert url not in repr(waiting), url


@pytest.mark.one_store
async def test_every_event_arrives_though_the_receiver_and_the_worker_die(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    """Deliveries in flight (the receiver holds them) when the worker is killed and the
    receiver goes down; another worker delivers them all to the receiver once it is back."""
    port = free_port()
    hanging = Receiver(port=port, hang_seconds=60).start()
    url = hanging.url
    env = {"WEBHOOK_URLS": url, "WEBHOOK_SECRET": SECRET}
    backend.script(model, [Reply(text="done")] * 3)
    receiver = Receiver(port=port)
    async with webhook_stack(temporal_address, backend, store, [url], with_worker=False) as stack, stack.sdk() as sdk:
        worker = spawn_worker(stack, env=env)
        try:
            ids = [(await sdk.responses.create(model=model, input="hi", background=True)).id for _ in range(3)]
            for response_id in ids:
                assert (await until_terminal(sdk, response_id)).status == "completed"
            await eventually(lambda: len(hanging.deliveries) >= 1, "a delivery to be in flight")
            kill(worker)
            hanging.stop()
            receiver.start()
            worker = spawn_worker(stack, env=env)
            for response_id in ids:
                await eventually(
                    lambda response_id=response_id: receiver.of(response_id), f"the event of {response_id}", seconds=30
                )
        finally:
            kill(worker)
            receiver.stop()
    assert sorted({delivery.event["data"]["id"] for delivery in receiver.deliveries}) == sorted(ids)
    # The events in flight when everything died came again with their ids: receivers de-duplicate by id.
    assert {delivery.headers["webhook-id"] for delivery in hanging.deliveries} <= {
        delivery.headers["webhook-id"] for delivery in receiver.deliveries
    }


async def test_a_webhook_url_the_egress_policy_refuses_gets_nothing_and_harms_nothing(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str
):
    url = "http://10.255.255.1/hooks"  # a private address, outside the tests' egress allowlist
    backend.script(model, [Reply(text="done")])
    refused_before = attempts("response.completed", "refused")
    async with webhook_stack(temporal_address, backend, store, [url]) as stack, stack.sdk() as sdk:
        response = await sdk.responses.create(model=model, input="hi", background=True)
        assert (await until_terminal(sdk, response.id)).status == "completed"

        await eventually(
            lambda: attempts("response.completed", "refused") > refused_before, "the refused attempt", seconds=20
        )
        await eventually(lambda: _empty(outbox_rows(stack)), "the refused event to leave the outbox")
        await asyncio.sleep(2.5)  # rounds later: never tried again
        assert attempts("response.completed", "refused") == refused_before + 1


async def _empty(rows: object) -> bool:
    return not await rows  # type: ignore[misc]


async def test_a_delivery_workflow_of_a_response_from_before_the_outbox_delivers_and_replays(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, receiver: Receiver
):
    """Responses that started before the outbox still start a `WebhookDelivery` per event and
    endpoint; the workflow stays registered, and its recorded history guards it."""
    async with webhook_stack(temporal_address, backend, store, [receiver.url]) as stack:
        event = WebhookEvent(
            id="evt_delivery_replayed", created_at=1, type="response.completed", data={"id": "resp_before_outbox"}
        )
        handle = await stack.client.start_workflow(
            "WebhookDelivery",
            WebhookDeliveryInput(endpoint=endpoint_id(receiver.url), event=event, policy=FAST),
            id=f"whd_{uuid.uuid4().hex}",
            task_queue=stack.settings.task_queue,
            result_type=WebhookDeliveryResult,
        )
        assert (await handle.result()).status_code == 200
        [delivery] = receiver.of("resp_before_outbox")
        assert delivery.headers["webhook-id"] == "evt_delivery_replayed"
        history = await handle.fetch_history()
        assert (await replayer().replay_workflow(history)).replay_failure is None
        await keep_recording("webhook_delivery", stack.client, handle.id)
