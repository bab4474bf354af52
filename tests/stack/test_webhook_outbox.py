"""Webhook deliveries per endpoint, from the outbox: a receiver that is down leaves its backlog
in one place (rows, counted in metrics), its circuit opens after five failures in a row so it
is probed, not hammered, and once it is back it gets every event, in order; another endpoint
is never held up by it. On both stores, against real receivers, with the dispatcher's clock
moved forward past the cooldowns instead of waiting them out."""

from __future__ import annotations

from access.egress import EgressPolicy
from activities.webhooks import WebhookActivities
from models.webhooks import WebhookEvent, WebhookPolicy
from sealing.webhooks import new_secret, secret_bytes
from store.opening import open_database
from store.webhooks import WebhookOutbox
from telemetry.metrics import REGISTRY
from tests.support.processes import free_port
from tests.support.stack import TEST_EGRESS, EmptyStore
from tests.support.webhook_receiver import Receiver, attempts
from worker.webhooks import CIRCUIT_THRESHOLD, WebhookDispatcher

POLICY = WebhookPolicy(
    initial_interval_seconds=0.01, maximum_interval_seconds=0.02, give_up_after_seconds=3600, attempt_timeout_seconds=2
)
EVENTS = 30


class Clock:
    def __init__(self) -> None:
        import time

        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _gauge(name: str, endpoint: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"endpoint": endpoint})


async def test_a_receiver_that_is_down_waits_in_the_outbox_behind_its_open_circuit_and_then_gets_all_in_order(
    store: EmptyStore,
):
    port = free_port()
    down_url, working = f"http://127.0.0.1:{port}/hooks", Receiver().start()
    db = open_database(store.url)
    await db.migrate()
    outbox, clock = WebhookOutbox(db), Clock()
    secret = new_secret()
    deliverer = WebhookActivities(
        {"down": down_url, "up": working.url}, secret_bytes(secret), EgressPolicy.parse(TEST_EGRESS)
    )
    dispatcher = WebhookDispatcher(outbox, deliverer.deliver_webhook, clock=clock)
    back = Receiver(port=port)
    try:
        events = [
            WebhookEvent(
                id=f"evt_{number:03d}", created_at=1, type="response.completed", data={"id": f"resp_{number:03d}"}
            )
            for number in range(EVENTS)
        ]
        for event in events:
            await outbox.put(["down"], event, POLICY, int(clock() * 1000))
        await outbox.put(["up"], events[0], POLICY, int(clock() * 1000))
        unreachable = attempts("response.completed", "unreachable")

        for _ in range(CIRCUIT_THRESHOLD + 5):
            await dispatcher.round()
            clock.now += 0.05  # past each backoff, far from the cooldown
        assert attempts("response.completed", "unreachable") - unreachable == CIRCUIT_THRESHOLD, (
            "an open circuit was still sent events"
        )
        assert [delivery.event["id"] for delivery in working.deliveries] == ["evt_000"], (
            "the working endpoint waited for the one that is down"
        )
        assert await outbox.backlog() == {"down": EVENTS}
        assert await outbox.open_circuits(int(clock() * 1000)) == {"down"}
        clock.now += 11  # the metrics' next count, the circuit still open
        await dispatcher.round()
        assert attempts("response.completed", "unreachable") - unreachable == CIRCUIT_THRESHOLD
        assert _gauge("durable_responses_webhook_backlog", "down") == EVENTS
        assert _gauge("durable_responses_webhook_circuit_open", "down") == 1

        clock.now += 20  # the cooldown is over: one probe, still down, and the circuit opens again
        await dispatcher.round()
        assert attempts("response.completed", "unreachable") - unreachable == CIRCUIT_THRESHOLD + 1
        assert await outbox.open_circuits(int(clock() * 1000)) == {"down"}

        back.start()
        clock.now += 61
        for _ in range(3):
            await dispatcher.round()
            clock.now += 0.05
        assert await outbox.backlog() == {}
        assert await outbox.open_circuits(int(clock() * 1000)) == set()
        assert [delivery.event["id"] for delivery in back.deliveries] == [event.id for event in events], (
            "not every event, once each, in the order they were put"
        )
        assert _gauge("durable_responses_webhook_backlog", "down") is None
    finally:
        working.stop()
        back.stop()
        await db.close()


async def test_an_event_put_twice_is_delivered_once(store: EmptyStore):
    receiver = Receiver().start()
    db = open_database(store.url)
    await db.migrate()
    outbox, clock = WebhookOutbox(db), Clock()
    secret = new_secret()
    dispatcher = WebhookDispatcher(
        outbox,
        WebhookActivities({"up": receiver.url}, secret_bytes(secret), EgressPolicy.parse(TEST_EGRESS)).deliver_webhook,
        clock=clock,
    )
    try:
        event = WebhookEvent(id="evt_once", created_at=1, type="response.completed", data={"id": "resp_once"})
        for _ in range(2):  # a workflow task that ran again puts the same rows
            await outbox.put(["up"], event, POLICY, int(clock() * 1000))
        await dispatcher.round()
        await dispatcher.round()
        assert [delivery.event["id"] for delivery in receiver.deliveries] == ["evt_once"]
        assert await outbox.backlog() == {}
    finally:
        receiver.stop()
        await db.close()
