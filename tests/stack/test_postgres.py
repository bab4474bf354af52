"""PostgreSQL, for real: what SQLite's single writer hides (concurrent starts on an empty
database, concurrent cancels), what a server restart does to pooled connections, libpq-style
URLs, and the access tables' queries."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from access.keys import KeyRing, KeyStore
from models.errors import StoreRefusedError, StoreUnavailableError
from models.ids import new_id
from models.responses import Response
from store.opening import open_database
from store.repository import ResponseRepository
from tests.support.postgres import PostgresServer
from tests.support.processes import CLI, free_port
from tests.support.scripted_backend import ScriptedBackend
from tests.support.waiting import eventually
from workflows.options import NON_RETRYABLE

why_not = PostgresServer.unavailable()
pytestmark = pytest.mark.skipif(why_not is not None, reason=f"PostgreSQL tests skipped: {why_not}")


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    server = PostgresServer().start()
    yield server
    server.stop()


def _response() -> Response:
    from models.requests import CreateResponseRequest

    return Response.from_request(new_id("resp"), 1, CreateResponseRequest.model_validate({"model": "m", "input": "hi"}))


async def test_many_processes_create_the_schema_of_an_empty_database_at_once(postgres: PostgresServer):
    url = postgres.create_database()
    databases = [open_database(url) for _ in range(4)]
    try:
        await asyncio.gather(*(database.migrate() for database in databases))
        async with databases[0].read() as transaction:
            assert await transaction.value("SELECT count(*) FROM api_keys") == 0
    finally:
        await asyncio.gather(*(database.close() for database in databases))


async def test_concurrent_cancels_of_one_response(postgres: PostgresServer):
    database = open_database(postgres.create_database())
    await database.migrate()
    repositories = [ResponseRepository(database) for _ in range(2)]
    try:
        response = _response()
        await repositories[0].responses.create(response, [(new_id("msg") + "x" * 100, {"type": "message"})])
        await asyncio.gather(*(repository.cancels.request(response.id) for repository in repositories * 5))
        assert await repositories[1].cancels.requested([response.id]) == {response.id}
    finally:
        await database.close()


async def test_a_value_the_database_refuses_is_a_store_refusal_never_retried(postgres: PostgresServer):
    """PostgreSQL keeps no NUL in text: the write fails the same way every time, so it is a
    `StoreRefusedError`, which no activity's retry policy retries."""
    database = open_database(postgres.create_database())
    await database.migrate()
    try:
        with pytest.raises(StoreRefusedError):
            async with database.write() as transaction:
                await transaction.run(
                    "INSERT INTO files (id, filename, purpose, bytes, created_at, sort_key, project) "
                    "VALUES ('file_nul', :name, 'assistants', 1, 0, 0, 'p')",
                    name="a\x00b.txt",
                )
        with pytest.raises(StoreRefusedError):
            async with database.write() as transaction:
                await transaction.run_many(
                    "INSERT INTO cancel_requests (response_id, requested_at) VALUES (:id, :at)",
                    [{"id": "resp_\x00", "at": 0}],
                )
        assert StoreRefusedError.__name__ in NON_RETRYABLE
    finally:
        await database.close()


async def test_a_server_restart_costs_no_failed_request(postgres: PostgresServer):
    database = open_database(postgres.create_database())
    await database.migrate()
    repository = ResponseRepository(database)
    try:
        response = _response()
        await repository.responses.create(response, [])
        assert await repository.responses.get(response.id) is not None
        await asyncio.to_thread(postgres.restart)
        for _ in range(20):
            assert await repository.responses.get(response.id) is not None
    finally:
        await database.close()


async def test_a_server_killed_under_reads_costs_at_most_a_store_unavailable(postgres: PostgresServer):
    """kill -9 of the postmaster while reads begin (a lost database host): a read whose BEGIN
    was in flight is retried on a fresh connection or fails as `StoreUnavailableError` (the API's
    503 with `retry-after`), never with asyncpg's own error (a 500); once the server is back,
    every read succeeds. (asyncpg hands a lost connection back to its pool by itself, so the
    pool's proxy refused the `terminate()` meant to keep it from being handed out again.)"""
    database = open_database(postgres.create_database())
    await database.migrate()
    repository = ResponseRepository(database)
    response = _response()
    await repository.responses.create(response, [])
    failures: list[BaseException] = []
    reads = 0

    async def reading(stop: asyncio.Event) -> None:
        nonlocal reads
        while not stop.is_set():
            try:
                await repository.responses.get(response.id)
                reads += 1
            except Exception as error:  # noqa: BLE001 - what kind is the verdict
                failures.append(error)
                await asyncio.sleep(0.05)

    try:
        for _ in range(3):
            stop = asyncio.Event()
            readers = [asyncio.create_task(reading(stop)) for _ in range(8)]
            await eventually(lambda: reads > 50, "reads to run")
            await asyncio.to_thread(postgres.crash)
            await asyncio.to_thread(postgres.start_again)
            before = reads
            await eventually(lambda before=before: reads > before + 50, "reads to run again")
            stop.set()
            await asyncio.gather(*readers)
        assert all(isinstance(failure, StoreUnavailableError) for failure in failures), failures
        for _ in range(20):
            assert await repository.responses.get(response.id) is not None
    finally:
        await database.close()


async def test_a_cancelled_transaction_gives_its_connection_back(postgres: PostgresServer):
    """Tasks are cancelled at every step of a transaction (a client that goes away, a watcher
    that is no longer needed): each must give its connection back, or the pool runs dry."""
    database = open_database(postgres.create_database(), pool_size=2)
    await database.migrate()

    async def reading() -> None:
        async with database.read() as transaction:
            await transaction.value("SELECT count(*) FROM responses")
            await transaction.value("SELECT 1")

    pauses = random.Random(15)
    try:
        for _ in range(300):  # cancelled after 0-3 ms: while acquiring, beginning, querying, committing
            task = asyncio.create_task(reading())
            await asyncio.sleep(pauses.uniform(0, 0.003))
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        async with asyncio.timeout(10):  # a leaked connection would make these wait for ever
            for _ in range(5):
                await reading()
    finally:
        async with asyncio.timeout(10):
            await database.close()


@pytest.mark.parametrize("query", ["?sslmode=disable", "?sslmode=prefer", "?sslmode=allow"])
async def test_libpq_style_urls_work(postgres: PostgresServer, query: str):
    database = open_database(postgres.create_database() + query)
    try:
        await database.migrate()
        async with database.read() as transaction:
            assert await transaction.value("SELECT 1") == 1
    finally:
        await database.close()


async def test_keys_and_projects_on_postgresql(postgres: PostgresServer):
    database = open_database(postgres.create_database())
    await database.migrate()
    try:
        keys = KeyStore(database)
        record, key = await keys.create("acme", approver=False)
        ring = KeyRing(keys)
        assert await ring.closed() and (await ring.find(key)) == record
        repository = ResponseRepository(database)
        response = _response()
        await repository.responses.create(response, [], project="acme", decided_by=record.id)
        assert await repository.responses.get(response.id, project="acme") is not None
        assert await repository.responses.get(response.id, project="other") is None
        page = await repository.responses.page(project="acme", after=None, limit=10, order="desc")
        assert [item["id"] for item in page.data] == [response.id]
        with pytest.raises(LookupError):
            await repository.responses.page(project="other", after=response.id, limit=10, order="desc")
        assert await keys.revoke(record.id)
        assert await KeyRing(keys, refresh_seconds=0).find(key) is None
    finally:
        await database.close()


def _role(
    command: list[str], url: str, temporal_address: str, backend: ScriptedBackend, queue: str, log: Path
) -> subprocess.Popen:
    environment = os.environ | {
        "DATABASE_URL": url,
        "TEMPORAL_ADDRESS": temporal_address,
        "TEMPORAL_TASK_QUEUE": queue,
        "INFERENCE_BASE_URL": backend.base_url,
        "INFERENCE_API_KEY": "test",
        "WORKFLOW_TASK_TIMEOUT_SECONDS": "2",
        "SANDBOX_DIR": str(log.parent / "containers"),  # never the default ./.durable-responses of a developer's dev
    }
    return subprocess.Popen([CLI, *command], env=environment, stdout=log.open("ab"), stderr=subprocess.STDOUT)


async def _ready(port: int) -> bool:
    async with httpx.AsyncClient(timeout=5) as client:
        try:
            return (await client.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200
        except httpx.HTTPError:
            return False


async def test_four_processes_start_together_on_an_empty_database_and_survive_its_restart(
    postgres: PostgresServer, temporal_address: str, backend: ScriptedBackend, tmp_path: Path
):
    """2 `serve` + 2 `worker` started at once on an empty database all come up; then the
    database restarts under load and no request fails."""
    url = postgres.create_database()
    queue = f"pg-{uuid.uuid4().hex[:8]}"
    ports = [free_port(), free_port()]
    processes = [
        _role(["serve", "--port", str(port)], url, temporal_address, backend, queue, tmp_path / f"serve{i}.log")
        for i, port in enumerate(ports)
    ]
    processes += [
        _role(["worker"], url, temporal_address, backend, queue, tmp_path / f"worker{i}.log") for i in range(2)
    ]
    try:
        for port in ports:
            await eventually(lambda port=port: _ready(port), f"serve on {port} to be ready", seconds=60)
        assert all(process.poll() is None for process in processes), [log.read_text() for log in tmp_path.glob("*.log")]
        # As users run them: the SDK retries a 503 (the store unavailable for a moment) by itself.
        clients = [
            openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=2) for port in ports
        ]
        outcomes: list[str] = []

        async def load(stop: asyncio.Event) -> None:
            turn = 0
            while not stop.is_set():
                turn += 1
                try:
                    response = await clients[turn % 2].responses.create(model="m", input=f"turn {turn}")
                    outcomes.append(response.status)
                except openai.APIError as error:
                    outcomes.append(f"error {getattr(error, 'status_code', type(error).__name__)}")

        stop = asyncio.Event()
        loaders = [asyncio.create_task(load(stop)) for _ in range(4)]
        # Load before, across and after the restart, counted in responses (not seconds: a
        # loaded machine makes fewer of them in a given time).
        await eventually(lambda: len(outcomes) >= 8, "responses before the restart", seconds=120)
        await asyncio.to_thread(postgres.restart)
        restarted = len(outcomes)
        await eventually(lambda: len(outcomes) >= restarted + 12, "responses after the restart", seconds=120)
        stop.set()
        await asyncio.gather(*loaders)
        failed = [outcome for outcome in outcomes if outcome != "completed"]
        print(f"{len(outcomes)} responses across a PostgreSQL restart, {len(failed)} not completed: {failed[:5]}")
        assert not failed
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
