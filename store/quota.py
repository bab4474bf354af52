"""Checking a project's quota (`models/quotas.py`) inside the transaction that adds to it: on
PostgreSQL the transaction first takes an advisory lock for the project and the quota (two
adds at once take turns); SQLite's write transaction holds the whole database already."""

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
