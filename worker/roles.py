"""The long-running roles: the worker, the HTTP API, and both in one process.

Each runs until its `Shutdown` is requested (the CLI requests it on SIGINT/SIGTERM), and
each says at start what it serves and which inference backend it uses.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from starlette.routing import BaseRoute
from starlette.types import ASGIApp
from temporalio.client import Client

from access.keys import KeyStore
from activities.early_calls import EarlyCalls
from activities.handover import Outcomes
from api.codec import CodecAccess
from api.ingestions import Ingestions
from chat_completions.client import shown_url
from demo.model import served_model
from http_plumbing.host_check import default_allowed_hosts, loopback
from http_plumbing.server import api_server
from models.errors import StartupError
from response_service.history_eraser import HistoryEraser
from response_service.runner import ResponseRunner
from sealing.payload_codec import EncryptedPayloads
from sealing.sealer import LegacyBlobs
from sealing.secret_box import SecretBox
from store.leases import Leases
from store.opening import open_database
from store.repository import ResponseRepository
from telemetry.metrics import metrics_app
from upstream.budgets import Budgets
from upstream.catalog import ModelCatalog
from upstream.known_models import KNOWN
from worker.code_execution import ContainerChores
from worker.health import worker_health_app
from worker.housekeeping import keep_house
from worker.http_app import create_app
from worker.orphans import OrphanSweeper
from worker.retention import Retention
from worker.settings import DEFAULT_INFERENCE_BASE_URL, Settings
from worker.shutdown import Shutdown
from worker.startup import wait_for
from worker.temporal import (
    ModelCalls,
    build_worker,
    connect,
    response_runner,
    temporal_connection,
    with_visibility,
)
from worker.vector_store_chores import VectorStoreChores

log = logging.getLogger(__name__)


@asynccontextmanager
async def opened_store(settings: Settings) -> AsyncIterator[ResponseRepository]:
    try:
        db = open_database(settings.database_url, pool_size=settings.database_pool_size)
    except (ValueError, OSError, sqlite3.Error) as error:
        raise StartupError(f"cannot open the database {shown_url(settings.database_url)}: {error}") from error
    try:
        await wait_for(
            f"the database {shown_url(settings.database_url)}", db.migrate, seconds=settings.startup_wait_seconds
        )
    except BaseException:
        await db.close()
        raise
    try:
        # Blobs sealed before purpose keys open only for the projects that existed when they were sealed.
        legacy = LegacyBlobs(project_births=await KeyStore(db).project_births()) if settings.secrets_key else None
        yield ResponseRepository(
            db,
            stream_poll_seconds=settings.stream_poll_seconds,
            cancel_poll_seconds=settings.cancel_poll_seconds,
            secret_box=SecretBox(settings.secrets_key, legacy) if settings.secrets_key else None,
        )
    finally:
        await db.close()


async def connect_with_retry(settings: Settings) -> Client:
    where = temporal_connection(settings)
    log.info("Temporal: %s", where.describe())
    return await wait_for(
        f"Temporal at {where.target_host}",
        lambda: connect(settings),
        seconds=settings.startup_wait_seconds,
        hint=" (is it running? `durable-responses dev` starts one; else set TEMPORAL_ADDRESS)",
    )


def orphan_sweeper(
    repository: ResponseRepository, runner: ResponseRunner, *, grace_seconds: float = 30.0
) -> OrphanSweeper:
    """The orphan sweep (`worker/orphans.py`) on the store's parts it reads."""
    return OrphanSweeper(
        runner,
        starts=repository.starts,
        events=repository.events,
        responses=repository.responses,
        webhook_endpoints=repository.webhook_endpoints,
        grace_seconds=grace_seconds,
    )


@asynccontextmanager
async def working(
    client: Client,
    settings: Settings,
    repository: ResponseRepository,
    shutdown: Shutdown | None = None,
    *,
    outcomes: Outcomes,
    grace_seconds: float = 0.0,
    early_calls: EarlyCalls | None = None,
) -> AsyncIterator[None]:
    """A worker polling the task queue, and its chores: starting responses their API server
    never started, removing what the retention settings let go."""
    stop_sweeping = asyncio.Event()
    orphans = orphan_sweeper(repository, response_runner(client, settings, repository, outcomes, local_worker=True))
    retention = Retention(
        repository.responses,
        repository.events,
        unstored_seconds=settings.unstored_retention_seconds,
        retention_days=settings.response_retention_days,
    )
    eraser = HistoryEraser(repository.history_deletions, client)
    vector_stores = VectorStoreChores(repository.vector_stores, Ingestions(client, settings.task_queue))
    chores = {
        "orphan sweep": orphans.sweep,
        "retention sweep": retention.sweep,
        "history erasure": eraser.sweep,
        "unfinished ingestions": vector_stores.restart_unfinished,
        "vector store expiry": vector_stores.expire,
        "unfinished uploads": repository.files.sweep_orphans,
        "idle upstream budgets": Budgets(repository.db).forget_idle,
        "abandoned containers": ContainerChores(repository.containers).expire_abandoned,
        "aged safety strikes": lambda: repository.strikes.forget_before(
            time.time() - settings.moderation.safety.window_seconds
        ),
    }
    async with build_worker(
        client,
        settings,
        repository,
        outcomes=outcomes,
        shutdown=shutdown,
        grace_seconds=grace_seconds,
        early_calls=early_calls,
    ):
        sweeping = asyncio.create_task(
            keep_house(chores, settings.housekeeping_interval_seconds, stop_sweeping, leases=Leases(repository.db))
        )
        try:
            yield
        finally:
            stop_sweeping.set()
            await sweeping


def freeze_what_starting_made() -> None:
    """Hide what the process made to start (modules, schemas, clients, the worker: hundreds of
    thousands of objects that live as long as it does) from the garbage collector, which then
    walks only what requests make. Under load, Python's full collections walked them all and
    held the event loop for 50 to 160 ms (`python -m bench.attacks`)."""
    gc.collect()
    gc.freeze()


def announce_backend(settings: Settings) -> None:
    """Which backend answers, and whether a key is set (never the key), once at start."""
    log.info("%s", settings.backend_summary())
    log.info("%s", settings.search().described())
    log.info("%s", settings.sandbox.described())
    if webhooks := settings.webhooks_summary():
        log.info("%s", webhooks)
    for warning in settings.backend_warnings():
        log.warning("%s", warning)


@asynccontextmanager
async def learning_models(settings: Settings) -> AsyncIterator[None]:
    """Where a deployment serves any name (no models file, or a `*` entry), its backend's own
    list says which names this process knows too (`upstream/known_models.py`), read at start and
    every minute while the process runs."""
    registry = settings.registry()
    if not registry.serves_any:
        yield
        return
    stop = asyncio.Event()
    learning = asyncio.create_task(KNOWN.keep_learning(ModelCatalog(registry), stop))
    try:
        yield
    finally:
        stop.set()
        await learning


async def run_worker(settings: Settings, shutdown: Shutdown) -> None:
    settings.check_backend()
    settings.check_webhooks()
    async with opened_store(settings) as repository, learning_models(settings):
        client = await connect_with_retry(settings)
        async with working(
            client, settings, repository, shutdown, outcomes=Outcomes(), grace_seconds=settings.shutdown_grace_seconds
        ):
            log.info("worker polling task queue %r", settings.task_queue)
            announce_backend(settings)
            freeze_what_starting_made()
            if settings.worker_health_port is None:
                await shutdown.requested.wait()
                return
            app = worker_health_app(
                repository.ping,
                client,
                running=lambda: not shutdown.requested.is_set(),
                metrics_auth=settings.metrics_auth,
            )
            log.info("worker health on http://0.0.0.0:%d (/livez, /readyz)", settings.worker_health_port)
            await _serve_http(
                app,
                "0.0.0.0",
                settings.worker_health_port,
                shutdown.requested,
                0.0,
                settings.header_timeout_seconds,
                announce=False,
            )


CLOSING_NOTICE_SECONDS = 0.5
"""Before the grace period ends, requests still waiting for their responses are answered
(503, naming the response) this long ahead of being cut off."""


async def _check_open(settings: Settings, host: str, repository: ResponseRepository) -> None:
    """With no API key, a loopback server runs open and says so; one on another address
    refuses to start unless told to run open (`--open`)."""
    if await KeyStore(repository.db).all():
        log.info("API keys are required (Authorization: Bearer ...)")
        return
    if loopback(host) or settings.allow_open:
        log.warning(
            "no API keys exist: anyone who can reach %s may use this server. Create one with "
            "`durable-responses keys create --project NAME`; from then on every request needs a key",
            host,
        )
        return
    raise StartupError(
        f"no API keys exist, and {host} is not a loopback address: create a key with `durable-responses keys create "
        "--project NAME --database-url ...`, or run open on purpose with --open (ALLOW_OPEN=true)"
    )


async def _serve_http(
    app: ASGIApp,
    host: str,
    port: int,
    stop: asyncio.Event,
    grace_seconds: float,
    header_timeout_seconds: float = 10.0,
    *,
    closing: asyncio.Event | None = None,
    announce: bool = True,
) -> None:
    """Serve until `stop`; then open requests get `grace_seconds`, and `closing` is set just
    before that runs out (the API answers requests still waiting)."""
    server = api_server(app, host, port, grace_seconds=grace_seconds, header_timeout_seconds=header_timeout_seconds)
    serving = asyncio.create_task(server.serve())
    stopping = asyncio.create_task(stop.wait())
    while not (server.started or serving.done()):
        await asyncio.sleep(0.01)
    if serving.done():  # the port was taken (uvicorn has logged why)
        stopping.cancel()
        raise StartupError(f"cannot serve HTTP on {host}:{port} (is the port in use?)")
    if announce:
        log.info("API listening on http://%s:%d/v1", host, port)
    await asyncio.wait({serving, stopping}, return_when=asyncio.FIRST_COMPLETED)
    server.should_exit = True
    notice = (
        None
        if closing is None
        else asyncio.get_running_loop().call_later(max(0.0, grace_seconds - CLOSING_NOTICE_SECONDS), closing.set)
    )
    try:
        await serving
    finally:
        if notice is not None:
            notice.cancel()


async def run_api(
    settings: Settings, host: str, port: int, shutdown: Shutdown, *, with_worker: bool, mounts: Sequence[BaseRoute] = ()
) -> None:
    """The HTTP API; with `with_worker`, a worker on the same client, so workflows start eagerly.
    `mounts` are more routes for the app (`dev`'s demo tools)."""
    settings.check_backend()
    settings.check_webhooks()
    async with opened_store(settings) as repository, learning_models(settings):
        await _check_open(settings, host, repository)
        client = await connect_with_retry(settings)
        settings = settings.model_copy(update={"execution": await with_visibility(client, settings.execution)})
        outcomes = Outcomes()  # what this process's worker hands over to its requests
        # A response's first turn begins beside its start: on this process's worker, or (`serve`)
        # on model calls of this process's own, whose turn the worker's execution then adopts.
        early_calls = EarlyCalls(worker_here=with_worker)
        app = create_app(
            repository,
            response_runner(client, settings, repository, outcomes, local_worker=with_worker, early_calls=early_calls),
            max_in_flight=settings.max_in_flight_responses,
            limits=settings.limits(),
            served_model=served_model if settings.uses_demo_model else None,
            mounts=mounts,
            egress=settings.egress(),
            quotas=settings.quotas(),
            allowed_hosts=settings.allowed_hosts or default_allowed_hosts(host),
            cors_allow_origins=settings.cors_allow_origins,
            access_log=settings.access_log,
            tracing=settings.tracing,
            interactive_wait_seconds=settings.inference_interactive_wait_seconds,
            codec_access=codec_access(settings),
            metrics_auth=settings.metrics_auth,
            metrics_route=settings.metrics_port is None,
            embedding_model=settings.embedding_model,
            sandbox=settings.sandbox,
            websocket=settings.websocket,
            moderation=settings.moderation,
        )
        shutdown.track("open request", lambda: app.state.admission.in_flight)
        announce_backend(settings)
        async with _metrics_port(settings, host, repository, shutdown):
            grace = settings.shutdown_grace_seconds
            closing = app.state.admission.closing
            if not with_worker:
                lent = (
                    ModelCalls.of(settings, repository, for_api=True).lent(early_calls, grace)
                    if _names_a_backend(settings)
                    else contextlib.nullcontext()
                )
                async with lent:
                    freeze_what_starting_made()
                    await _serve_http(
                        app, host, port, shutdown.requested, grace, settings.header_timeout_seconds, closing=closing
                    )
                return
            async with working(client, settings, repository, shutdown, outcomes=outcomes, early_calls=early_calls):
                freeze_what_starting_made()
                await _serve_http(
                    app, host, port, shutdown.requested, grace, settings.header_timeout_seconds, closing=closing
                )


def _names_a_backend(settings: Settings) -> bool:
    """A models file, a base URL or a key is set (an API server needed none before): only then
    does `serve` make first turns' model calls itself."""
    configured = settings.models_file, settings.inference_base_url != DEFAULT_INFERENCE_BASE_URL
    return any(configured) or bool(settings.inference_api_key)


@asynccontextmanager
async def _metrics_port(
    settings: Settings, host: str, repository: ResponseRepository, shutdown: Shutdown
) -> AsyncIterator[None]:
    """`/metrics` on a port of its own (`METRICS_PORT`), while the API serves."""
    if settings.metrics_port is None:
        yield
        return
    serving = asyncio.create_task(
        _serve_http(
            metrics_app(repository, settings.metrics_auth),
            host,
            settings.metrics_port,
            shutdown.requested,
            0.0,
            settings.header_timeout_seconds,
            announce=False,
        )
    )
    log.info("metrics on http://%s:%d/metrics", host, settings.metrics_port)
    try:
        yield
    finally:
        await serving


def codec_access(settings: Settings) -> CodecAccess:
    ring = settings.key_ring()
    return CodecAccess(
        codec=EncryptedPayloads(ring) if ring else None,
        authorization=settings.codec_auth,
        allowed_origins=settings.codec_allowed_origins,
    )
