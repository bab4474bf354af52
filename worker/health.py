"""A worker's health port (`worker --health-port PORT`): `/livez` and `/readyz` (also
`/health`), for orchestrators' probes, and `/metrics` (Prometheus), nothing else. Ready means the store and Temporal
answer and this worker runs (it stops being ready the moment it begins to stop)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client

from api.health import livez, ready
from telemetry.access_log import AccessLog
from telemetry.metrics import guarded_metrics


def worker_health_app(
    store_ping: Callable[[], Awaitable[None]], client: Client, running: Callable[[], bool], *, metrics_auth: str = ""
) -> Starlette:
    async def temporal() -> None:
        await client.workflow_service.get_system_info(GetSystemInfoRequest())

    async def worker() -> str | None:
        return None if running() else "the worker is stopping"

    async def readyz(_request: Request) -> JSONResponse:
        return await ready({"store": store_ping, "temporal": temporal, "worker": worker})

    return Starlette(
        routes=[
            Route("/livez", livez),
            Route("/readyz", readyz),
            Route("/health", readyz),
            Route("/metrics", guarded_metrics(metrics_auth)),
        ],
        middleware=[Middleware(AccessLog, enabled=False)],
    )
