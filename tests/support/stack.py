"""The stack the tests run against: the API and a worker in the test's process, as `durable-responses
dev` runs them, on a store of the test's own (SQLite or PostgreSQL), asking the scripted backend."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
import pytest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from access.quotas import QuotaSettings
from activities.early_calls import EarlyCalls
from activities.handover import Outcomes
from guardrails.settings import ModerationSettings
from http_plumbing.server import api_server
from models.workflow_io import ExecutionSettings, RetryBudget
from response_service.runner import ResponseRunner
from sandbox.settings import SandboxSettings
from sealing.secret_box import SecretBox
from store.repository import ResponseRepository
from tests.support.scripted_backend import ScriptedBackend
from websocket_mode.settings import WebSocketSettings
from worker.http_app import create_app
from worker.roles import codec_access, opened_store
from worker.settings import Settings
from worker.temporal import build_worker, connect, with_visibility

SECRETS_KEY = SecretBox.new_key()

# Fast retries, so failure paths finish in well under a second.
TEST_EGRESS = "127.0.0.1"
"""The tests' MCP servers listen on loopback, which the egress guard refuses unless allowed."""

TEST_EXECUTION = ExecutionSettings(
    inference=RetryBudget(
        start_to_close_seconds=30, maximum_attempts=3, initial_interval_seconds=0.05, maximum_interval_seconds=0.2
    ),
    store=RetryBudget(start_to_close_seconds=10, maximum_attempts=5, initial_interval_seconds=0.05),
    mcp_list=RetryBudget(start_to_close_seconds=5, maximum_attempts=2, initial_interval_seconds=0.05),
    mcp_call=RetryBudget(start_to_close_seconds=120, maximum_attempts=2, initial_interval_seconds=0.05),
    web_search_call=RetryBudget(start_to_close_seconds=30, maximum_attempts=4, initial_interval_seconds=0.05),
    mcp_heartbeat_seconds=3,
    approval_timeout_seconds=120,
)


STORE_KINDS = ("sqlite", "postgresql")


@dataclass(frozen=True)
class EmptyStore:
    """A response store of its own for one test (or one session's shared stack): a SQLite
    file in the test's directory, or a fresh database on the session's PostgreSQL server."""

    kind: str
    url: str
    data_dir: Path


def empty_store(kind: str, data_dir: Path, request: pytest.FixtureRequest) -> EmptyStore:
    if kind == "postgresql":
        return EmptyStore(kind, request.getfixturevalue("postgres_server").create_database(), data_dir)
    return EmptyStore(kind, f"sqlite:///{data_dir / 'responses.db'}", data_dir)


@dataclass
class Stack:
    """The API and a worker in this process, as `durable-responses dev` runs them."""

    base_url: str
    settings: Settings
    client: Client
    store: EmptyStore
    repository: ResponseRepository
    """The store as the stack's own processes use it (for cases set up by hand)."""
    shared: bool = False
    """The session's stack, which every test without a stack of its own uses: no API key may be
    made on it, since one key closes a server for everyone (`make_key` refuses)."""

    def sdk(self, **options: object) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self.base_url, api_key="test", _strict_response_validation=True, max_retries=0, **options
        )

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30)


@contextlib.asynccontextmanager
async def running_stack(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    *,
    with_worker: bool = True,
    task_timeout_seconds: float = 10.0,
    execution: ExecutionSettings = TEST_EXECUTION,
    max_in_flight: int = 1000,
    send_reasoning: bool = False,
    inference_base_url: str | None = None,
    inference_api_key: str = "",
    quotas: QuotaSettings | None = None,
    tracing: bool = False,
    webhook_urls: list[str] | None = None,
    webhook_secret: str = "",
    models_file: str | None = None,
    interactive_wait_seconds: float = 60.0,
    codec_allowed_origins: list[str] | None = None,
    web_search_provider: str | None = None,
    web_search_url: str | None = None,
    web_search_api_key: str = "",
    embedding_model: str = "lexical",
    worker_deployment_name: str | None = None,
    egress_allowlist: str = TEST_EGRESS,
    sandbox: SandboxSettings | None = None,
    websocket: WebSocketSettings | None = None,
    moderation: ModerationSettings | None = None,
) -> AsyncIterator[Stack]:
    """The API (and, `with_worker`, a worker) in this process, asking `backend` (or the
    backend at `inference_base_url`) for inference."""
    settings = Settings(
        temporal_address=temporal_address,
        temporal_environment=False,
        task_queue=f"tests-{uuid.uuid4().hex[:8]}",
        database_url=store.url,
        inference_base_url=inference_base_url or backend.base_url,
        inference_api_key=inference_api_key,
        execution=execution,
        secrets_key=SECRETS_KEY,
        inference_send_reasoning=send_reasoning,
        egress_allowlist=egress_allowlist,
        tracing=tracing,
        webhook_urls=webhook_urls or [],
        webhook_secret=webhook_secret,
        models_file=models_file,
        codec_allowed_origins=codec_allowed_origins or [],
        web_search_provider=web_search_provider,
        web_search_url=web_search_url,
        web_search_api_key=web_search_api_key,
        worker_deployment_name=worker_deployment_name,
        embedding_model=embedding_model,
        sandbox=sandbox or SandboxSettings(directory=store.data_dir / "containers"),
        moderation=moderation or ModerationSettings(),
    )
    client = await connect(settings)
    settings = settings.model_copy(update={"execution": await with_visibility(client, settings.execution)})
    async with opened_store(settings) as repository:
        outcomes = Outcomes()
        early_calls = EarlyCalls()  # as `dev`: a response's first turn begins beside its start
        runner = ResponseRunner(
            client,
            settings.task_queue,
            settings.execution,
            task_timeout_seconds=task_timeout_seconds,
            responses=repository.responses,
            history_deletions=repository.history_deletions,
            local_worker=with_worker,
            outcomes=outcomes,
            registry=settings.registry(),
            early_calls=early_calls if with_worker else None,
            events=repository.events,
        )
        app = create_app(
            repository,
            runner,
            max_in_flight=max_in_flight,
            egress=settings.egress(),
            quotas=quotas,
            tracing=tracing,
            interactive_wait_seconds=interactive_wait_seconds,
            codec_access=codec_access(settings),
            embedding_model=settings.embedding_model,
            sandbox=settings.sandbox,
            websocket=websocket,
            moderation=settings.moderation,
        )
        # the test process keeps its signal handlers
        server = api_server(app, "127.0.0.1", 0, grace_seconds=5)
        worker = build_worker(client, settings, repository, outcomes=outcomes, early_calls=early_calls)
        async with worker if with_worker else contextlib.nullcontext():
            serving = asyncio.create_task(server.serve())
            while not server.started:
                await asyncio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            try:
                yield Stack(f"http://127.0.0.1:{port}/v1", settings, client, store, repository)
            finally:
                server.should_exit = True
                try:  # connections still open are closed after the graceful timeout
                    await asyncio.wait_for(serving, 15)
                except TimeoutError:
                    pytest.fail("the test stack's HTTP server did not stop within 15 s")


async def has_workflow(stack: Stack, response_id: str) -> bool:
    """Whether Temporal still has the response's workflow (its history not erased)."""
    try:
        await stack.client.get_workflow_handle(response_id).describe()
        return True
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
