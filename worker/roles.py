"""The long-running roles: the worker, the HTTP API, and both in one process.

Each runs until `stop` is set (the CLI sets it on SIGINT/SIGTERM).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager, contextmanager
from typing import AsyncIterator

import uvicorn
from temporalio.client import Client

from api.app import create_app
from api.runner import ResponseRunner
from store.database import open_database
from store.repository import ResponseRepository
from store.secret_box import SecretBox
from worker.housekeeping import keep_house
from worker.orphans import OrphanSweeper
from worker.retention import Retention
from worker.settings import Settings
from worker.temporal import build_worker, connect

log = logging.getLogger(__name__)


@asynccontextmanager
async def opened_store(settings: Settings) -> AsyncIterator[ResponseRepository]:
    db = open_database(settings.database_url)
    await db.create_schema()
    try:
        yield ResponseRepository(
            db,
            stream_poll_seconds=settings.stream_poll_seconds,
            cancel_poll_seconds=settings.cancel_poll_seconds,
            secret_box=SecretBox(settings.secrets_key) if settings.secrets_key else None,
        )
    finally:
        await db.close()


async def connect_with_retry(settings: Settings, *, attempts: int = 60) -> Client:
    for attempt in range(attempts):
        try:
            return await connect(settings)
        except Exception as error:  # noqa: BLE001 - any failure to connect is retried
            if attempt == attempts - 1:
                raise
            log.info("waiting for Temporal at %s (%s)", settings.temporal_address, error)
            await asyncio.sleep(0.5)
    raise AssertionError("unreachable")


def _runner(client: Client, settings: Settings, repository: ResponseRepository, *, local_worker: bool) -> ResponseRunner:
    return ResponseRunner(
        client, settings.task_queue, settings.execution, task_timeout_seconds=settings.workflow_task_timeout_seconds,
        repository=repository, local_worker=local_worker,
    )


@asynccontextmanager
async def working(client: Client, settings: Settings, repository: ResponseRepository) -> AsyncIterator[None]:
    """A worker polling the task queue, and its chores: starting responses their API server
    never started, removing what the retention settings let go."""
    stop_sweeping = asyncio.Event()
    orphans = OrphanSweeper(repository, _runner(client, settings, repository, local_worker=True))
    retention = Retention(repository, client, unstored_seconds=settings.unstored_retention_seconds,
                          retention_days=settings.response_retention_days)
    chores = {"orphan sweep": orphans.sweep, "retention sweep": retention.sweep}
    async with build_worker(client, settings, repository):
        sweeping = asyncio.create_task(keep_house(chores, settings.housekeeping_interval_seconds, stop_sweeping))
        try:
            yield
        finally:
            stop_sweeping.set()
            await sweeping


async def run_worker(settings: Settings, stop: asyncio.Event) -> None:
    client = await connect_with_retry(settings)
    async with opened_store(settings) as repository, working(client, settings, repository):
        log.info("worker polling task queue %r", settings.task_queue)
        await stop.wait()


class _QuietServer(uvicorn.Server):
    """Signals belong to the CLI, which turns them into `stop`; uvicorn must not take them."""

    @contextmanager
    def capture_signals(self):  # noqa: ANN201
        yield


async def _serve_http(app, host: str, port: int, stop: asyncio.Event, grace_seconds: float) -> None:  # noqa: ANN001
    server = _QuietServer(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off",
                                         timeout_graceful_shutdown=grace_seconds))
    serving = asyncio.create_task(server.serve())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    server.should_exit = True
    await serving


async def run_api(settings: Settings, host: str, port: int, stop: asyncio.Event, *, with_worker: bool) -> None:
    """The HTTP API; with `with_worker`, a worker on the same client, so workflows start eagerly."""
    client = await connect_with_retry(settings)
    async with opened_store(settings) as repository:
        app = create_app(repository, _runner(client, settings, repository, local_worker=with_worker),
                         max_in_flight=settings.max_in_flight_responses, limits=settings.limits())
        if not with_worker:
            await _serve_http(app, host, port, stop, settings.shutdown_grace_seconds)
            return
        async with working(client, settings, repository):
            await _serve_http(app, host, port, stop, settings.shutdown_grace_seconds)
