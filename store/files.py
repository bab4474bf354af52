"""Uploaded files (`/v1/files`): each kept whole, bytes and all, in its project."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from store.database import Database
from store.paging import page_of_rows

COLUMNS = "id, project, filename, purpose, bytes, created_at, expires_at"


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

    async def create(self, row: FileRow, content: bytes) -> None:
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO files (id, project, filename, purpose, bytes, created_at, expires_at, sort_key, content) "
                "VALUES (:id, :project, :filename, :purpose, :bytes, :created_at, :expires_at, :sort_key, :content)",
                id=row.id,
                project=row.project,
                filename=row.filename,
                purpose=row.purpose,
                bytes=row.bytes,
                created_at=row.created_at,
                expires_at=row.expires_at,
                sort_key=time.time_ns() // 1000,
                content=content,
            )

    async def get(self, file_id: str, project: str) -> FileRow | None:
        async with self.db.read() as transaction:
            found = await transaction.one(
                f"SELECT {COLUMNS} FROM files WHERE id = :id AND project = :project", id=file_id, project=project
            )
        return None if found is None else _row(found)

    async def some(self, file_ids: list[str], project: str) -> dict[str, FileRow]:
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {COLUMNS} FROM files WHERE id IN (:ids) AND project = :project", ids=file_ids, project=project
            )
        return {row["id"]: _row(row) for row in rows}

    async def content(self, file_id: str) -> bytes | None:
        async with self.db.read() as transaction:
            found = await transaction.value("SELECT content FROM files WHERE id = :id", id=file_id)
        return None if found is None else bytes(found)

    async def filename(self, file_id: str) -> str | None:
        async with self.db.read() as transaction:
            filename: str | None = await transaction.value("SELECT filename FROM files WHERE id = :id", id=file_id)
            return filename

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

    async def delete(self, file_id: str, project: str) -> bool:
        """The file and its chunks in every vector store (OpenAI keeps a deleted file's chunks
        searchable; here a deleted file is gone from search too)."""
        async with self.db.write() as transaction:
            gone = await transaction.run(
                "DELETE FROM files WHERE id = :id AND project = :project", id=file_id, project=project
            )
            if gone:
                await transaction.run("DELETE FROM vector_store_chunks WHERE file_id = :id", id=file_id)
                await transaction.run("DELETE FROM vector_store_files WHERE file_id = :id", id=file_id)
        return bool(gone)
