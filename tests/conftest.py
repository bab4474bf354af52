"""The fixtures: real parts. A Temporal dev server from the installed binary, the scripted backend
over HTTP, a SQLite file or a real PostgreSQL server (every test that runs on a store runs on
both), our worker and API served by uvicorn, and the official `openai` SDK in strict mode as
the client. Nothing of ours is mocked. The helpers are in `tests/support/`; the pure tests in
`tests/unit/`, the ones that run the stack in `tests/stack/`."""

from __future__ import annotations

import compileall
import dataclasses
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import openai
import pytest
from temporalio.testing import WorkflowEnvironment

from models.visibility import SEARCH_ATTRIBUTES
from telemetry.logs import install_filters
from tests.support.house import ROOT, folders
from tests.support.mcp_servers import McpTestServer
from tests.support.postgres import PostgresServer
from tests.support.scripted_backend import ScriptedBackend
from tests.support.stack import STORE_KINDS, EmptyStore, Stack, empty_store, running_stack
from tests.support.webhook_receiver import Receiver
from worker.dev import DEV_SERVER_CONFIG, dynamic_config_arguments, temporal_binary


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
        dev_server_extra_args=[
            "--sqlite-pragma",
            "journal_mode=wal",
            "--sqlite-pragma",
            "synchronous=normal",
            # As `durable-responses dev` configures its server; and a closed workflow's history
            # is deleted once its queue's ack level has moved past it, which the server records
            # every 30 s by default.
            *dynamic_config_arguments(DEV_SERVER_CONFIG | {"history.transferProcessorUpdateAckInterval": '"1s"'}),
        ],
        ui=False,
        search_attributes=SEARCH_ATTRIBUTES,
    )
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def temporal_address(temporal_env: WorkflowEnvironment) -> str:
    return temporal_env.client.service_client.config.target_host


@pytest.fixture(scope="session")
async def stack(
    temporal_address: str,
    backend: ScriptedBackend,
    store_kind: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Stack]:
    """One stack for the session on each kind of store; tests on it run on both."""
    store = empty_store(store_kind, tmp_path_factory.mktemp(f"stack-{store_kind}"), request)
    async with running_stack(temporal_address, backend, store) as running:
        yield dataclasses.replace(running, shared=True)


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


def compile_the_project() -> None:
    """Compile the project's modules, as a regular install does when it installs them.

    The tests start hundreds of processes that import this project: workers, `dev`, `serve`,
    the CLI, file readers. An editable install leaves its modules uncompiled, and where
    `PYTHONDONTWRITEBYTECODE` is set (CI's container sets it) every one of those processes
    compiled them again: 0.45 s of CPU of each worker's start."""
    for folder in [*folders(), "tests"]:
        compileall.compile_dir(ROOT / folder, quiet=1)


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once, in the process that starts the others
        compile_the_project()
    # pytest keeps the test modules it rewrites (for its assertions) as bytecode only where
    # bytecode may be written; with `PYTHONDONTWRITEBYTECODE` set, each of the suite's
    # processes rewrote and compiled all of them again at every run: 1.8 s of CPU a process.
    sys.dont_write_bytecode = False
    os.environ.setdefault("INFERENCE_API_KEY", "test")
    install_filters()  # expected activity failures are one calm line here too, as in the CLI
    config.addinivalue_line(
        "markers",
        "command_seconds(n): a sandboxed command's time in the test's code stack (5 s unless it says)",
    )
    config.addinivalue_line(
        "markers",
        "one_store: what the test checks is not the store's (a browser, processes "
        "killed, Temporal's timing): it runs on SQLite only, to keep CI in its budget",
    )


def pytest_report_header(config: pytest.Config) -> str:
    """Which real model server the real-model tests run against (`tests/support/real_model/`)."""
    from tests.support.real_model import MODEL_NAME, MODEL_SHA256, missing, server_version

    if missing() is not None:
        return f"real model: none ({missing()}); tests/stack/test_real_model.py is skipped"
    return f"real model: {MODEL_NAME}, sha256 {MODEL_SHA256[:12]}…, on {server_version()}"


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
