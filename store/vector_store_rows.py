"""The rows of vector stores, their files and batches as the store reads them, and each one's
wire shape (`/v1/vector_stores`); the queries are `store/vector_stores.py`'s."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from store.codec import loads

STATUSES = ("in_progress", "completed", "failed", "cancelled")
"""Where a file's ingestion stands; a store's and a batch's `file_counts` count each."""
DAY_SECONDS = 86_400


def counts_of(rows: list[Any]) -> dict[str, int]:
    counts = dict.fromkeys(STATUSES, 0)
    for row in rows:
        counts[row["status"]] = row["n"]
    return counts | {"total": sum(counts.values())}


@dataclass(frozen=True)
class VectorStoreRow:
    id: str
    project: str
    name: str
    metadata: dict[str, str]
    created_at: int
    last_active_at: int
    expires_after_days: int | None
    embedding_model: str
    file_counts: dict[str, int] = field(default_factory=lambda: counts_of([]))
    usage_bytes: int = 0

    def to_wire(self) -> dict[str, Any]:
        expires_at = self.last_active_at + self.expires_after_days * DAY_SECONDS if self.expires_after_days else None
        return {
            "id": self.id,
            "object": "vector_store",
            "created_at": self.created_at,
            "name": self.name,
            "usage_bytes": self.usage_bytes,
            "file_counts": self.file_counts,
            "status": "in_progress" if self.file_counts["in_progress"] else "completed",
            "expires_after": {"anchor": "last_active_at", "days": self.expires_after_days}
            if self.expires_after_days
            else None,
            "expires_at": expires_at,
            "last_active_at": self.last_active_at,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class VectorStoreFileRow:
    vector_store_id: str
    file_id: str
    batch_id: str | None
    status: str
    last_error: dict[str, str] | None
    attributes: dict[str, Any]
    chunking_strategy: dict[str, Any]
    usage_bytes: int
    created_at: int
    chunk_count: int | None = None
    """How many chunks it made, once chunked (its ingestion embeds them from then on)."""
    fresh: bool = False
    """Added by the call that answered it (not a file the store had already)."""

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.file_id,
            "object": "vector_store.file",
            "created_at": self.created_at,
            "vector_store_id": self.vector_store_id,
            "status": self.status,
            "last_error": self.last_error,
            "usage_bytes": self.usage_bytes,
            "attributes": self.attributes,
            "chunking_strategy": self.chunking_strategy,
        }


@dataclass(frozen=True)
class BatchRow:
    id: str
    vector_store_id: str
    created_at: int
    cancelled: bool
    file_counts: dict[str, int]

    def to_wire(self) -> dict[str, Any]:
        counts = self.file_counts
        status = (
            "in_progress"
            if counts["in_progress"]
            else "cancelled"
            if self.cancelled and counts["cancelled"]
            else "completed"
        )
        return {
            "id": self.id,
            "object": "vector_store.files_batch",
            "created_at": self.created_at,
            "vector_store_id": self.vector_store_id,
            "status": status,
            "file_counts": counts,
        }


@dataclass(frozen=True)
class NewFile:
    """A file going into a vector store."""

    file_id: str
    attributes: dict[str, Any]
    chunking_strategy: dict[str, Any]


def file_of(row: Any) -> VectorStoreFileRow:
    return VectorStoreFileRow(
        row["vector_store_id"],
        row["file_id"],
        row["batch_id"],
        row["status"],
        loads(row["last_error"]) if row["last_error"] is not None else None,
        loads(row["attributes"]),
        loads(row["chunking_strategy"]),
        row["usage_bytes"],
        row["created_at"],
        row["chunk_count"],
    )
