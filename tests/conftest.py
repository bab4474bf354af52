"""Real parts: a Temporal dev server from the installed binary, the scripted backend over
HTTP, a SQLite file or a real PostgreSQL server (every test that runs on a store runs on
both), our worker and API served by uvicorn, and the official `openai` SDK in strict mode as
the client. Nothing of ours is mocked."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterator

import httpx
import openai
import pytest
import uvicorn
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from access.quotas import QuotaSettings
from api.app import create_app
from api.runner import ResponseRunner
from models.visibility import SEARCH_ATTRIBUTES
from models.workflow_io import ExecutionSettings, RetryBudget
from sealing.secret_box import SecretBox
from telemetry.logs import install_filters
from tests.mcp_servers import McpTestServer
from tests.postgres import PostgresServer
from tests.scripted_backend import ScriptedBackend
from tests.webhook_receiver import Receiver
from worker.dev import temporal_binary
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


@pytest.fixture(scope="session")
def backend() -> ScriptedBackend:
    server = ScriptedBackend().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mcp_server() -> McpTestServer:
    server = McpTestServer("streamable").start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def mcp_sse_server() -> McpTestServer:
    server = McpTestServer("sse").start()
    yield server
    server.stop()


STORE_KINDS = ("sqlite", "postgresql")


@dataclass(frozen=True)
class EmptyStore:
    """A response store of its own for one test (or one session's shared stack): a SQLite
    file in the test's directory, or a fresh database on the session's PostgreSQL server."""

    kind: str
    url: str
    data_dir: Path


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    why_not = PostgresServer.unavailable()
    if why_not is not None:
        pytest.skip(f"PostgreSQL tests skipped: {why_not}")
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session", params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    """Every test that runs on a store runs on both kinds."""
    return request.param


def empty_store(kind: str, data_dir: Path, request: pytest.FixtureRequest) -> EmptyStore:
    if kind == "postgresql":
        return EmptyStore(kind, request.getfixturevalue("postgres_server").create_database(), data_dir)
    return EmptyStore(kind, f"sqlite:///{data_dir / 'responses.db'}", data_dir)


@pytest.fixture
def store(store_kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> EmptyStore:
    return empty_store(store_kind, tmp_path, request)


@pytest.fixture
def sqlite_store(tmp_path: Path) -> EmptyStore:
    """For what only SQLite has (its files, `secure_delete`, its WAL)."""
    return EmptyStore("sqlite", f"sqlite:///{tmp_path / 'responses.db'}", tmp_path)


@pytest.fixture(scope="session")
def temporal_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dev server's SQLite file (tests read it to prove what history does not hold)."""
    return tmp_path_factory.mktemp("temporal") / "temporal.db"


@pytest.fixture(scope="session")
async def temporal_env(temporal_db: Path) -> AsyncIterator[WorkflowEnvironment]:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        dev_server_database_filename=str(temporal_db),
        dev_server_extra_args=["--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
                               # A closed workflow's history is deleted once its queue's ack level has
                               # moved past it, which the server records every 30 s by default.
                               "--dynamic-config-value", 'history.transferProcessorUpdateAckInterval="1s"',
                               # As `durable-responses dev` sets it: a start through the task queue
                               # is not held up to 50 ms by the transfer queue's polling.
                               "--dynamic-config-value", "history.transferProcessorMaxPollRPS=1000"],
        ui=False, search_attributes=SEARCH_ATTRIBUTES,
    )
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def temporal_address(temporal_env: WorkflowEnvironment) -> str:
    return temporal_env.client.service_client.config.target_host


@dataclass
class Stack:
    """The API and a worker in this process, as `durable-responses dev` runs them."""

    base_url: str
    settings: Settings
    client: Client
    store: EmptyStore

    def sdk(self, **options: object) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            base_url=self.base_url, api_key="test", _strict_response_validation=True, max_retries=0, **options
        )

    def http(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.base_url.removesuffix("/v1"), timeout=30)


@contextlib.asynccontextmanager
async def running_stack(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, *, with_worker: bool = True,
    task_timeout_seconds: float = 10.0, execution: ExecutionSettings = TEST_EXECUTION, max_in_flight: int = 1000,
    send_reasoning: bool = False, inference_base_url: str | None = None, inference_api_key: str = "",
    quotas: QuotaSettings | None = None, tracing: bool = False, webhook_urls: list[str] | None = None,
    webhook_secret: str = "", models_file: str | None = None, interactive_wait_seconds: float = 60.0,
    codec_allowed_origins: list[str] | None = None, web_search_provider: str | None = None,
    web_search_url: str | None = None, web_search_api_key: str = "", embedding_model: str = "lexical",
) -> AsyncIterator[Stack]:
    """The API (and, `with_worker`, a worker) in this process, asking `backend` (or the
    backend at `inference_base_url`) for inference."""
    settings = Settings(
        temporal_address=temporal_address, temporal_environment=False,
        task_queue=f"tests-{uuid.uuid4().hex[:8]}",
        database_url=store.url,
        inference_base_url=inference_base_url or backend.base_url,
        inference_api_key=inference_api_key,
        execution=execution,
        secrets_key=SECRETS_KEY,
        inference_send_reasoning=send_reasoning,
        egress_allowlist=TEST_EGRESS,
        tracing=tracing,
        webhook_urls=webhook_urls or [],
        webhook_secret=webhook_secret,
        models_file=models_file,
        codec_allowed_origins=codec_allowed_origins or [],
        web_search_provider=web_search_provider, web_search_url=web_search_url,
        web_search_api_key=web_search_api_key, embedding_model=embedding_model,
    )
    client = await connect(settings)
    settings = settings.model_copy(update={"execution": await with_visibility(client, settings.execution)})
    async with opened_store(settings) as repository:
        runner = ResponseRunner(
            client, settings.task_queue, settings.execution, task_timeout_seconds=task_timeout_seconds,
            repository=repository, local_worker=with_worker, registry=settings.registry(),
        )
        app = create_app(repository, runner, max_in_flight=max_in_flight, egress=settings.egress(), quotas=quotas,
                         tracing=tracing, interactive_wait_seconds=interactive_wait_seconds,
                         codec_access=codec_access(settings), embedding_model=settings.embedding_model)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off",
                                               timeout_graceful_shutdown=5))
        async with build_worker(client, settings, repository) if with_worker else contextlib.nullcontext():
            serving = asyncio.create_task(server.serve())
            while not server.started:
                await asyncio.sleep(0.01)
            port = server.servers[0].sockets[0].getsockname()[1]
            try:
                yield Stack(f"http://127.0.0.1:{port}/v1", settings, client, store)
            finally:
                server.should_exit = True
                try:  # connections still open are closed after the graceful timeout
                    await asyncio.wait_for(serving, 15)
                except TimeoutError:
                    pytest.fail("the test stack's HTTP server did not stop within 15 s")


@pytest.fixture(scope="session")
async def stack(
    temporal_address: str, backend: ScriptedBackend, store_kind: str, tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Stack]:
    """One stack for the session on each kind of store; tests on it run on both."""
    store = empty_store(store_kind, tmp_path_factory.mktemp(f"stack-{store_kind}"), request)
    async with running_stack(temporal_address, backend, store) as running:
        yield running


@pytest.fixture
async def sdk(stack: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    client = stack.sdk()
    yield client
    await client.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A webhook receiver of the test's own."""
    receiver = Receiver().start()
    yield receiver
    receiver.stop()


@pytest.fixture
def model() -> str:
    """A model name of this test's own, so its script and recorded requests are its alone."""
    return f"model-{uuid.uuid4().hex[:10]}"


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault("INFERENCE_API_KEY", "test")
    install_filters()  # expected activity failures are one calm line here too, as in the CLI
    config.addinivalue_line("markers", "one_store: what the test checks is not the store's (a browser, processes "
                                       "killed, Temporal's timing): it runs on SQLite only, to keep CI in its budget")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `one_store` run on SQLite only (deselected, not skipped, on PostgreSQL)."""
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("store_kind") == "postgresql"
        (dropped if on_postgres and item.get_closest_marker("one_store") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


async def eventually(check: Callable[[], Any], what: str, *, seconds: float = 30, poll_seconds: float = 0.05) -> Any:
    """Until `check()` (plain or async) gives something truthy, which is returned; a test that
    waits longer than `seconds` fails naming what it waited for, rather than hanging."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds:g} s for {what}")
        await asyncio.sleep(poll_seconds)


async def until_requested(backend: ScriptedBackend, model: str, count: int = 1, *, seconds: float = 30) -> None:
    """Until the backend has received `count` requests for this model."""
    await eventually(lambda: len(backend.requests(model)) >= count,
                     f"{count} upstream request(s) for model {model} (got {len(backend.requests(model))})",
                     seconds=seconds)


async def until_terminal(client: openai.AsyncOpenAI, response_id: str, poll_seconds: float = 0.05, seconds: float = 60):
    """Poll the response until it reaches a terminal status; returns it. A poll whose kept-alive
    connection the server closed as it was reused (HTTP/1.1's idle-timeout race, which the SDK
    would retry on its own; the tests' clients retry nothing) is simply polled again."""

    async def ended():  # noqa: ANN202
        try:
            response = await client.responses.retrieve(response_id)
        except openai.APIConnectionError:
            return None
        return response if response.status not in ("queued", "in_progress") else None

    return await eventually(ended, f"response {response_id} to end", seconds=seconds, poll_seconds=poll_seconds)


async def until_awaiting_approval(client: openai.AsyncOpenAI, response_id: str, seconds: float = 30):
    """Until the background response shows, last in its output, an approval request it waits for."""

    async def asking():  # noqa: ANN202
        response = await client.responses.retrieve(response_id)
        assert response.status in ("queued", "in_progress"), response
        return response if response.output and response.output[-1].type == "mcp_approval_request" else None

    return await eventually(asking, f"response {response_id} to ask for approval", seconds=seconds)


async def decoded_history(client: Client, workflow_id: str, run_id: str | None = None) -> Any:
    """The workflow's history (its latest run's, or `run_id`'s) with every payload decoded by
    the client's codec (as the UI shows it through the codec endpoint), for tests that look
    inside payloads."""
    from google.protobuf.descriptor import FieldDescriptor
    from temporalio.api.common.v1 import Payload

    history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    codec = client.data_converter.payload_codec
    found: list[Payload] = []

    def walk(message: Any) -> None:
        if isinstance(message, Payload):
            found.append(message)
            return
        for field, value in message.ListFields():
            if field.type != FieldDescriptor.TYPE_MESSAGE:
                continue
            if field.message_type.GetOptions().map_entry:
                values = list(value.values())
            elif field.is_repeated:
                values = list(value)
            else:
                values = [value]
            for item in values:
                if hasattr(item, "ListFields"):
                    walk(item)

    for event in history.events:
        walk(event)
    if codec is not None and found:
        for payload, opened in zip(found, await codec.decode(found)):
            payload.CopyFrom(opened)
    return history
