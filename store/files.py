"""Uploaded files (`/v1/files`) in their project, their bytes in parts of `PART_BYTES` (a
container's files keep theirs here too: `store/containers.py`).

A file's parts are written each in a short transaction of its own (a large upload never holds
SQLite's write lock for long), then its row in one that first checks the project's quota:
until the row is there the file does not exist for anyone. An upload that fails on the way
removes its parts; one whose process died leaves parts without a row, which `sweep_orphans`
removes once they are older than any upload may take.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from models.quotas import ProjectQuota, ProjectQuotas
from store import quota
from store.database import Database, Transaction
from store.paging import page_of_rows

COLUMNS = "id, project, filename, purpose, bytes, created_at, expires_at"
PART_BYTES = 1024 * 1024
ORPHAN_SECONDS = 6 * 3600
"""Parts without a file row this old belong to an upload that will never finish."""


class TooManyBytes(Exception):
    """A copy stopped at its most: nothing of it is kept."""

    def __init__(self, most: int) -> None:
        super().__init__(f"more than {most} bytes")
        self.most = most


@dataclass(frozen=True)
class FileRow:
    id: str
    project: str
    filename: str
    purpose: str
    bytes: int
    created_at: int
    expires_at: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.bytes,
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",
            "expires_at": self.expires_at,
            "status_details": None,
        }


def _row(found: Any) -> FileRow:
    return FileRow(
        found["id"],
        found["project"],
        found["filename"],
        found["purpose"],
        found["bytes"],
        found["created_at"],
        found["expires_at"],
    )


class Files:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def write_parts(self, file_id: str, pieces: AsyncIterator[bytes], most: int | None = None) -> int:
        """Keep `pieces` (each at most `PART_BYTES`) as the parts of `file_id`; how many bytes.
        The file does not exist until `create` gives it its row. Past `most` bytes it stops,
        drops what it kept and raises `TooManyBytes` (whatever the source does meanwhile: a
        file still growing as it is copied)."""
        size, part, now = 0, 0, int(time.time())
        async for piece in pieces:
            if most is not None and size + len(piece) > most:
                await self.drop_parts(file_id)
                raise TooManyBytes(most)
            async with self.db.write() as transaction:
                await transaction.run(
                    "INSERT INTO file_parts (file_id, part, data, written_at) VALUES (:id, :part, :data, :now)",
                    id=file_id,
                    part=part,
                    data=piece,
                    now=now,
                )
            size += len(piece)
            part += 1
        return size

    async def bytes_left(self, project: str, quotas: ProjectQuotas) -> int:
        """How many more bytes the project may keep (its uploads and its containers' files)."""
        async with self.db.read() as transaction:
            used = await quota.project_bytes(transaction, project)
        return max(0, quotas.limit(ProjectQuota.FILE_BYTES) - used)

    async def copy_parts(self, source: str, target: str) -> None:
        """The parts of `source` again, as `target`'s (a file copied into a container)."""
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO file_parts (file_id, part, data, written_at) "
                "SELECT :target, part, data, :now FROM file_parts WHERE file_id = :source",
                target=target,
                source=source,
                now=int(time.time()),
            )

    async def drop_parts(self, file_id: str) -> None:
        async with self.db.write() as transaction:
            await transaction.run("DELETE FROM file_parts WHERE file_id = :id", id=file_id)

    async def create(self, row: FileRow, quotas: ProjectQuotas) -> None:
        """The file's row, once its parts are written; `QuotaExceededError` when the project
        keeps as many files, or bytes, as its quota allows."""
        async with self.db.write() as transaction:
            await quota.hold(transaction, self.db.dialect, ProjectQuota.FILES, row.project)
            files = await transaction.value("SELECT count(*) FROM files WHERE project = :project", project=row.project)
            quota.check(quotas, ProjectQuota.FILES, int(files), 1, param="file")
            await quota.check_bytes(transaction, self.db.dialect, quotas, row.project, row.bytes, param="file")
            await transaction.run(
                "INSERT INTO files (id, project, filename, purpose, bytes, created_at, expires_at, sort_key) "
                "VALUES (:id, :project, :filename, :purpose, :bytes, :created_at, :expires_at, :sort_key)",
                id=row.id,
                project=row.project,
                filename=row.filename,
                purpose=row.purpose,
                bytes=row.bytes,
                created_at=row.created_at,
                expires_at=row.expires_at,
                sort_key=time.time_ns() // 1000,
            )

    async def get(self, file_id: str, project: str) -> FileRow | None:
        async with self.db.read() as transaction:
            found = await transaction.one(
                f"SELECT {COLUMNS} FROM files WHERE id = :id AND project = :project", id=file_id, project=project
            )
        return None if found is None else _row(found)

    async def find(self, file_id: str) -> FileRow | None:
        """The file, whichever project's (for the worker, which was given the id by its project)."""
        async with self.db.read() as transaction:
            found = await transaction.one(f"SELECT {COLUMNS} FROM files WHERE id = :id", id=file_id)
        return None if found is None else _row(found)

    async def some(self, file_ids: list[str], project: str) -> dict[str, FileRow]:
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {COLUMNS} FROM files WHERE id IN (:ids) AND project = :project", ids=file_ids, project=project
            )
        return {row["id"]: _row(row) for row in rows}

    async def parts(self, file_id: str) -> AsyncIterator[bytes]:
        """The file's bytes (an upload's, or a container file's), a part at a time (each read
        in a transaction of its own)."""
        part = 0
        while True:
            async with self.db.read() as transaction:
                data = await transaction.value(
                    "SELECT data FROM file_parts WHERE file_id = :id AND part = :part", id=file_id, part=part
                )
            if data is None:
                return
            yield bytes(data)
            part += 1

    async def page(
        self, project: str, purpose: str | None, *, after: str | None, limit: int, order: Literal["asc", "desc"]
    ) -> tuple[list[FileRow], bool]:
        where, params = "project = :project", {"project": project}
        if purpose is not None:
            where, params["purpose"] = where + " AND purpose = :purpose", purpose
        async with self.db.read() as transaction:
            rows, more = await page_of_rows(
                transaction, "files", COLUMNS, where, params, after=after, limit=limit, order=order
            )
        return [_row(row) for row in rows], more

    async def delete(self, file_id: str, project: str) -> list[str] | None:
        """The file, its parts and its chunks in every vector store (OpenAI keeps a deleted
        file's chunks searchable; here a deleted file is gone from search too). The vector
        stores whose ingestion of it was still running (theirs to stop), or None when there
        was no such file."""
        async with self.db.write() as transaction:
            gone = await transaction.run(
                "DELETE FROM files WHERE id = :id AND project = :project", id=file_id, project=project
            )
            if not gone:
                return None
            running = await transaction.all(
                "SELECT vector_store_id FROM vector_store_files WHERE file_id = :id AND status = 'in_progress'",
                id=file_id,
            )
            await _forget_file(transaction, file_id)
        return [row["vector_store_id"] for row in running]

    async def sweep_orphans(self, now: float | None = None) -> int:
        """Remove parts whose upload never made its file's row; how many."""
        before = int((now if now is not None else time.time()) - ORPHAN_SECONDS)
        async with self.db.write() as transaction:
            return await transaction.run(
                "DELETE FROM file_parts WHERE written_at < :before "
                "AND NOT EXISTS (SELECT 1 FROM files WHERE files.id = file_parts.file_id) "
                "AND NOT EXISTS (SELECT 1 FROM container_files WHERE container_files.id = file_parts.file_id)",
                before=before,
            )


async def _forget_file(transaction: Transaction, file_id: str) -> None:
    for table in ("file_parts", "vector_store_chunks", "vector_store_files"):
        await transaction.run(f"DELETE FROM {table} WHERE file_id = :id", id=file_id)
