"""A webhook receiver for tests: a real HTTP server in a thread of its own that keeps every
delivery it gets, and can answer 503 to the first few or hold each one a while."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from models.webhooks import WebhookPolicy
from sealing.webhooks import new_secret
from tests.support.threaded_server import ThreadedServer


@dataclass
class Delivery:
    headers: dict[str, str]
    body: str

    @property
    def event(self) -> dict:
        return json.loads(self.body)


@dataclass
class Receiver:
    """A webhook endpoint: keeps every delivery; answers 503 to the first `failing` ones, and
    with `hang_seconds` holds each request that long before answering (a delivery in flight)."""

    failing: int = 0
    port: int = 0
    hang_seconds: float = 0.0
    deliveries: list[Delivery] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ThreadedServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> Receiver:
        async def receive(request: Request) -> Response:
            delivery = Delivery(dict(request.headers), (await request.body()).decode())
            with self._lock:
                self.deliveries.append(delivery)
                failing = self.failing > 0
                self.failing -= 1 if failing else 0
            await asyncio.sleep(self.hang_seconds)
            return Response(status_code=503 if failing else 200)

        self._server = ThreadedServer(
            Starlette(routes=[Route("/hooks", receive, methods=["POST"])]),
            "webhook receiver",
            port=self.port,
            timeout_graceful_shutdown=1,
        ).start()
        self.port = self._server.port
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop(join_seconds=5)

    def of(self, response_id: str) -> list[Delivery]:
        with self._lock:
            return [delivery for delivery in self.deliveries if delivery.event["data"]["id"] == response_id]


SECRET = new_secret()
"""The signing secret of the tests' webhook endpoints."""


FAST = WebhookPolicy(  # retries in a second, so a failing receiver's story ends quickly
    initial_interval_seconds=0.2, maximum_interval_seconds=1.0, give_up_after_seconds=600, attempt_timeout_seconds=3
)


def attempts(event_type: str, outcome: str) -> float:
    """Delivery attempts this process's dispatchers made, with that outcome (its metrics)."""
    from telemetry.metrics import REGISTRY

    return (
        REGISTRY.get_sample_value(
            "durable_responses_webhook_attempt_duration_seconds_count", {"event_type": event_type, "outcome": outcome}
        )
        or 0.0
    )
