"""Schema versions (Alembic, `store/migrations`): the migrations build exactly the schema the
code declares, adopt a store made before migrations existed, let processes that start together
take turns, and a version older than the database refuses to start instead of guessing."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from store.migrate import head_revision
from store.opening import open_database
from store.schema import metadata
from tests.support import store_probe
from tests.support.processes import CLI
from tests.support.stack import EmptyStore


def _differences(connection) -> list:  # noqa: ANN001
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return compare_metadata(context, metadata)


async def schema_differences(url: str) -> list:
    """What Alembic's autogenerate would still have to change to reach `store/schema.py`."""
    if url.startswith("sqlite"):
        from sqlalchemy import create_engine

        engine = create_engine(url)
        try:
            with engine.connect() as connection:
                return _differences(connection)
        finally:
            engine.dispose()
    import asyncpg
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine("postgresql+asyncpg://", async_creator=lambda: asyncpg.connect(url))
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(_differences)
    finally:
        await engine.dispose()


async def migrated(url: str) -> None:
    database = open_database(url)
    try:
        await database.migrate()
    finally:
        await database.close()


async def test_the_migrations_build_the_schema_the_code_declares(store: EmptyStore):
    await migrated(store.url)
    assert await schema_differences(store.url) == []
    assert await store_probe.value(store.url, "SELECT version_num FROM alembic_version") == head_revision()
    await migrated(store.url)  # again: nothing to do
    assert await store_probe.rows(store.url, "SELECT version_num FROM alembic_version") == [(head_revision(),)]


async def test_a_store_made_before_migrations_is_adopted_with_its_rows(store: EmptyStore):
    """A store as the version before migrations left it: no version table, no API keys,
    workers, approval waits, open approvals, webhook endpoints, upstream budgets, tool
    dispatches, history deletions, files or vector stores, chore leases, webhook outbox,
    steers, prompts or safety strikes tables, no `conversation_id`, `project`, `decided_by`,
    `reason` or `written_at` columns; and a response in it."""
    await migrated(store.url)
    await store_probe.execute(
        store.url,
        "DROP TABLE alembic_version",
        "DROP TABLE api_keys",
        "DROP TABLE workers",
        "DROP TABLE approval_waits",
        "DROP TABLE open_approvals",
        "DROP TABLE webhook_endpoints",
        "DROP TABLE upstream_budgets",
        "DROP TABLE upstream_queues",
        "DROP TABLE tool_dispatches",
        "DROP TABLE history_deletions",
        "DROP TABLE files",
        "DROP TABLE file_parts",
        "DROP TABLE containers",
        "DROP TABLE container_files",
        "DROP TABLE vector_stores",
        "DROP TABLE vector_store_files",
        "DROP TABLE vector_store_file_batches",
        "DROP TABLE vector_store_chunks",
        "DROP TABLE chore_leases",
        "DROP TABLE webhook_outbox",
        "DROP TABLE webhook_queues",
        "DROP TABLE steers",
        "DROP TABLE prompts",
        "DROP TABLE safety_strikes",
        "DROP INDEX ix_responses_previous",
        "DROP INDEX ix_responses_conversation_id",
        "ALTER TABLE responses DROP COLUMN conversation_id",
        "DROP INDEX ix_responses_unconfirmed",
        "DROP INDEX ix_responses_unstored",
        "ALTER TABLE responses DROP COLUMN start_confirmed",
        "DROP INDEX ix_chat_contexts_base_response_id",
        "ALTER TABLE chat_contexts DROP COLUMN base_response_id",
        "ALTER TABLE chat_contexts DROP COLUMN base_length",
        "ALTER TABLE approval_decisions DROP COLUMN reason",
        "DROP INDEX ix_responses_project_sort_key",
        "ALTER TABLE responses DROP COLUMN project",
        "ALTER TABLE conversations DROP COLUMN project",
        "ALTER TABLE approval_decisions DROP COLUMN decided_by",
        "ALTER TABLE events DROP COLUMN written_at",
        "INSERT INTO responses (id, created_at, sort_key, status, stored, data) "
        "VALUES ('resp_old', 1, 1, 'completed', TRUE, '{}')",
    )
    assert await schema_differences(store.url) != []

    await migrated(store.url)

    assert await schema_differences(store.url) == []
    assert await store_probe.rows(store.url, "SELECT id, project FROM responses") == [("resp_old", "")]
    assert await store_probe.value(store.url, "SELECT version_num FROM alembic_version") == head_revision()


async def test_processes_starting_together_on_an_empty_store_take_turns(store: EmptyStore):
    """Four processes open the same empty store at once (`keys list` migrates first, as
    `serve`, `worker` and `dev` do): every one succeeds and the schema is made once."""
    starts = [
        asyncio.create_subprocess_exec(
            CLI, "keys", "list", "--database-url", store.url, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    processes = await asyncio.gather(*starts)
    results = await asyncio.gather(*(process.communicate() for process in processes))
    for process, (_, stderr) in zip(processes, results, strict=True):
        assert process.returncode == 0, stderr.decode()
    assert await schema_differences(store.url) == []
    assert await store_probe.rows(store.url, "SELECT version_num FROM alembic_version") == [(head_revision(),)]


async def test_a_database_migrated_by_a_newer_version_is_refused_in_one_line(store: EmptyStore):
    await migrated(store.url)
    await store_probe.execute(store.url, "UPDATE alembic_version SET version_num = '9999_future'")
    answer = subprocess.run(
        [CLI, "keys", "list", "--database-url", store.url], capture_output=True, text=True, timeout=60
    )
    assert answer.returncode != 0
    lines = answer.stderr.strip().splitlines()
    assert len(lines) == 1 and "9999_future" in lines[0] and head_revision() in lines[0], answer.stderr
    assert "Traceback" not in answer.stderr
    # and it changed nothing
    assert await store_probe.value(store.url, "SELECT version_num FROM alembic_version") == "9999_future"


@pytest.mark.parametrize("role", ["serve", "worker"])
async def test_a_role_refuses_a_newer_schema_too(sqlite_store: EmptyStore, role: str):
    await migrated(sqlite_store.url)
    await store_probe.execute(sqlite_store.url, "UPDATE alembic_version SET version_num = '9999_future'")
    answer = subprocess.run(
        [CLI, role, "--database-url", sqlite_store.url, "--temporal-address", "127.0.0.1:1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert answer.returncode != 0 and "9999_future" in answer.stderr and "Traceback" not in answer.stderr, answer.stderr
