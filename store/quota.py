"""Checking a project's quota (`models/quotas.py`) inside the transaction that adds to it: on
PostgreSQL the transaction first takes an advisory lock for the project and the quota (two
adds at once take turns); SQLite's write transaction holds the whole database already.

A project's bytes are one quota for everything it stores (`project_bytes`): its uploads, its
containers' files, each by the bytes kept in the store, and each file again for every vector
store that holds it (its chunks and their embeddings: counted by the file's size, which keeps
no file from being multiplied a thousand times over without counting)."""

from __future__ import annotations

from models.quotas import ProjectQuota, ProjectQuotas, QuotaExceededError
from store.database import Transaction


async def hold(transaction: Transaction, dialect: str, quota: ProjectQuota, owner: str) -> None:
    """Take turns with other transactions adding to `owner`'s `quota` (a project, or a store)."""
    if dialect == "postgresql":
        await transaction.value("SELECT pg_advisory_xact_lock(hashtext(:key))", key=f"quota/{quota.value}/{owner}")


def check(quotas: ProjectQuotas, quota: ProjectQuota, used: int, adding: int, *, param: str | None = None) -> None:
    """`QuotaExceededError` unless `used + adding` stays within the quota."""
    limit = quotas.limit(quota)
    if used + adding > limit:
        raise QuotaExceededError(quota, limit, param=param)


async def project_bytes(transaction: Transaction, project: str) -> int:
    """Every byte the project keeps in the store: its files', its containers' files', and its
    files' again for each vector store that holds them."""
    found = await transaction.one(
        "SELECT (SELECT coalesce(sum(bytes), 0) FROM files WHERE project = :project) + "
        "(SELECT coalesce(sum(container_files.bytes), 0) FROM container_files "
        "JOIN containers ON containers.id = container_files.container_id WHERE containers.project = :project) + "
        "(SELECT coalesce(sum(files.bytes), 0) FROM vector_store_files "
        "JOIN vector_stores ON vector_stores.id = vector_store_files.vector_store_id "
        "JOIN files ON files.id = vector_store_files.file_id WHERE vector_stores.project = :project) "
        "AS bytes",
        project=project,
    )
    return int(found["bytes"]) if found is not None else 0


async def check_bytes(
    transaction: Transaction, dialect: str, quotas: ProjectQuotas, project: str, adding: int, *, param: str | None
) -> None:
    """`QuotaExceededError` unless `adding` more bytes keep the project within its byte quota
    (taking turns with other transactions that add bytes to it)."""
    await hold(transaction, dialect, ProjectQuota.FILE_BYTES, project)
    check(quotas, ProjectQuota.FILE_BYTES, await project_bytes(transaction, project), adding, param=param)
