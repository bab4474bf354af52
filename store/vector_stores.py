"""Vector stores, the files in them and their batches (`/v1/vector_stores`).

A file's row says where its ingestion stands (`workflows/ingestion.py`): it starts
`in_progress` and leaves it once, to `completed`, `failed` or `cancelled` (`settle` changes
only a row still in progress, so a cancel and an ingestion's end cannot overwrite each
other). A vector store's status and `file_counts`, and a batch's, are counted from those
rows when read.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from models.quotas import ProjectQuota, ProjectQuotas
from store import quota
from store.codec import dumps, loads
from store.database import Conflict, Database, Transaction
from store.paging import page_of_rows
from store.vector_store_rows import BatchRow, NewFile, VectorStoreFileRow, VectorStoreRow, counts_of, file_of

Order = Literal["asc", "desc"]
STORE_COLUMNS = "id, project, name, metadata, created_at, last_active_at, expires_after_days, embedding_model"
FILE_COLUMNS = (
    "vector_store_id, file_id, batch_id, status, last_error, attributes, chunking_strategy, usage_bytes, created_at, "
    "chunk_count"
)


class VectorStores:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(
        self, row: VectorStoreRow, files: list[NewFile], quotas: ProjectQuotas, *, param: str | None = None
    ) -> list[VectorStoreFileRow]:
        """The store with its first files; `QuotaExceededError` when its project keeps as many
        stores as it may, or the files are more than one store may hold (`param` names them)."""
        async with self.db.write() as transaction:
            await quota.hold(transaction, self.db.dialect, ProjectQuota.VECTOR_STORES, row.project)
            stores = await transaction.value(
                "SELECT count(*) FROM vector_stores WHERE project = :project", project=row.project
            )
            quota.check(quotas, ProjectQuota.VECTOR_STORES, int(stores), 1)
            await transaction.run(
                "INSERT INTO vector_stores (id, project, name, metadata, created_at, last_active_at, "
                "expires_after_days, sort_key, embedding_model) VALUES (:id, :project, :name, :metadata, "
                ":created_at, :last_active_at, :expires_after_days, :sort_key, :embedding_model)",
                id=row.id,
                project=row.project,
                name=row.name,
                metadata=dumps(row.metadata),
                created_at=row.created_at,
                last_active_at=row.last_active_at,
                expires_after_days=row.expires_after_days,
                sort_key=time.time_ns() // 1000,
                embedding_model=row.embedding_model,
            )
            return await self._add(transaction, row.id, files, None, quotas, param, self.db.dialect)

    async def get(self, vector_store_id: str, project: str) -> VectorStoreRow | None:
        async with self.db.read() as transaction:
            found = await transaction.one(
                f"SELECT {STORE_COLUMNS} FROM vector_stores WHERE id = :id AND project = :project",
                id=vector_store_id,
                project=project,
            )
            return None if found is None else await self._store(transaction, found)

    async def some(self, vector_store_ids: list[str], project: str) -> dict[str, VectorStoreRow]:
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {STORE_COLUMNS} FROM vector_stores WHERE id IN (:ids) AND project = :project",
                ids=vector_store_ids,
                project=project,
            )
            return {row["id"]: await self._store(transaction, row) for row in rows}

    @staticmethod
    async def _store(transaction: Transaction, row: Any) -> VectorStoreRow:
        counts = await transaction.all(
            "SELECT status, count(*) AS n FROM vector_store_files WHERE vector_store_id = :id GROUP BY status",
            id=row["id"],
        )
        usage = await transaction.value(
            "SELECT sum(usage_bytes) FROM vector_store_files WHERE vector_store_id = :id", id=row["id"]
        )
        return VectorStoreRow(
            row["id"],
            row["project"],
            row["name"],
            loads(row["metadata"]),
            row["created_at"],
            row["last_active_at"],
            row["expires_after_days"],
            row["embedding_model"],
            counts_of(counts),
            int(usage or 0),
        )

    async def page(
        self, project: str, *, after: str | None, before: str | None, limit: int, order: Order
    ) -> tuple[list[VectorStoreRow], bool]:
        async with self.db.read() as transaction:
            rows, more = await page_of_rows(
                transaction,
                "vector_stores",
                STORE_COLUMNS,
                "project = :project",
                {"project": project},
                after=after,
                before=before,
                limit=limit,
                order=order,
            )
            return [await self._store(transaction, row) for row in rows], more

    async def update(self, vector_store_id: str, changes: dict[str, Any]) -> None:
        if "metadata" in changes:
            changes = changes | {"metadata": dumps(changes["metadata"])}
        assigned = ", ".join(f"{name} = :{name}" for name in changes)
        async with self.db.write() as transaction:
            await transaction.run(f"UPDATE vector_stores SET {assigned} WHERE id = :id", id=vector_store_id, **changes)

    async def touch(self, vector_store_ids: list[str]) -> None:
        """A search used them: they were active now (`last_active_at`, which expiry counts from)."""
        async with self.db.write() as transaction:
            await transaction.run(
                "UPDATE vector_stores SET last_active_at = :now WHERE id IN (:ids)",
                now=int(time.time()),
                ids=vector_store_ids,
            )

    async def delete(self, vector_store_id: str) -> list[str]:
        """The store, its files' rows, batches and chunks; the files still in progress."""
        async with self.db.write() as transaction:
            running = await transaction.all(
                "SELECT file_id FROM vector_store_files WHERE vector_store_id = :id AND status = 'in_progress'",
                id=vector_store_id,
            )
            for table, column in (
                ("vector_store_chunks", "vector_store_id"),
                ("vector_store_files", "vector_store_id"),
                ("vector_store_file_batches", "vector_store_id"),
                ("vector_stores", "id"),
            ):
                await transaction.run(f"DELETE FROM {table} WHERE {column} = :id", id=vector_store_id)
        return [row["file_id"] for row in running]

    async def add_files(
        self,
        vector_store_id: str,
        files: list[NewFile],
        quotas: ProjectQuotas,
        batch_id: str | None = None,
        *,
        param: str | None = None,
    ) -> list[VectorStoreFileRow]:
        """The files' rows, `in_progress`; a file already in the store keeps the row it has
        (and its ingestion: it is not ingested twice). `QuotaExceededError` when the store
        would hold more files than one may, or its project more bytes (each file counts again
        for each store that holds it; `param` names them)."""
        async with self.db.write() as transaction:
            await quota.hold(transaction, self.db.dialect, ProjectQuota.FILES_PER_VECTOR_STORE, vector_store_id)
            if batch_id is not None:
                await transaction.run(
                    "INSERT INTO vector_store_file_batches (id, vector_store_id, created_at, "
                    "cancelled) VALUES (:id, :store, :now, FALSE)",
                    id=batch_id,
                    store=vector_store_id,
                    now=int(time.time()),
                )
            return await self._add(transaction, vector_store_id, files, batch_id, quotas, param, self.db.dialect)

    @staticmethod
    async def _add(
        transaction: Transaction,
        vector_store_id: str,
        files: list[NewFile],
        batch_id: str | None,
        quotas: ProjectQuotas,
        param: str | None,
        dialect: str,
    ) -> list[VectorStoreFileRow]:
        now, key = int(time.time()), time.time_ns() // 1000
        distinct = {each.file_id: each for each in files}
        if distinct:
            held = await transaction.all(
                "SELECT file_id FROM vector_store_files WHERE vector_store_id = :store", store=vector_store_id
            )
            have = {row["file_id"] for row in held}
            quota.check(
                quotas,
                ProjectQuota.FILES_PER_VECTOR_STORE,
                len(have),
                len(distinct.keys() - have),
                param=param,
            )
            fresh = sorted(distinct.keys() - have)
            if fresh:  # each file counts again for each store that holds it (its chunks)
                project = await transaction.value(
                    "SELECT project FROM vector_stores WHERE id = :store", store=vector_store_id
                )
                adding = await transaction.value(
                    "SELECT coalesce(sum(bytes), 0) FROM files WHERE id IN (:ids)", ids=fresh
                )
                await quota.check_bytes(transaction, dialect, quotas, str(project), int(adding), param=param)
        added = []
        for offset, new in enumerate(distinct.values()):
            existing = await transaction.one(
                f"SELECT {FILE_COLUMNS} FROM vector_store_files WHERE vector_store_id = :store AND file_id = :file",
                store=vector_store_id,
                file=new.file_id,
            )
            if existing is not None:
                added.append(file_of(existing))
                continue
            row = VectorStoreFileRow(
                vector_store_id,
                new.file_id,
                batch_id,
                "in_progress",
                None,
                new.attributes,
                new.chunking_strategy,
                0,
                now,
                fresh=True,
            )
            try:
                await transaction.run(
                    "INSERT INTO vector_store_files (vector_store_id, file_id, batch_id, status, attributes, "
                    "chunking_strategy, usage_bytes, created_at, sort_key) VALUES (:store, :file, :batch, "
                    "'in_progress', :attributes, :chunking, 0, :now, :key)",
                    store=vector_store_id,
                    file=new.file_id,
                    batch=batch_id,
                    attributes=dumps(new.attributes),
                    chunking=dumps(new.chunking_strategy),
                    now=now,
                    key=key + offset,
                )
            except Conflict:
                continue
            added.append(row)
        return added

    async def file(self, vector_store_id: str, file_id: str) -> VectorStoreFileRow | None:
        async with self.db.read() as transaction:
            found = await transaction.one(
                f"SELECT {FILE_COLUMNS} FROM vector_store_files WHERE vector_store_id = :store AND file_id = :file",
                store=vector_store_id,
                file=file_id,
            )
        return None if found is None else file_of(found)

    async def files_page(
        self,
        vector_store_id: str,
        *,
        status: str | None,
        batch_id: str | None,
        after: str | None,
        before: str | None,
        limit: int,
        order: Order,
    ) -> tuple[list[VectorStoreFileRow], bool]:
        where, params = "vector_store_id = :store", {"store": vector_store_id}
        if status is not None:
            where, params["status"] = where + " AND status = :status", status
        if batch_id is not None:
            where, params["batch"] = where + " AND batch_id = :batch", batch_id
        async with self.db.read() as transaction:
            rows, more = await page_of_rows(
                transaction,
                "vector_store_files",
                FILE_COLUMNS,
                where,
                params,
                id_column="file_id",
                after=after,
                before=before,
                limit=limit,
                order=order,
            )
        return [file_of(row) for row in rows], more

    async def attributes_of(self, vector_store_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Each completed file's attributes, by file id (for filters)."""
        async with self.db.scan() as transaction:  # as many as a store holds files: off the loop
            rows = await transaction.all(
                "SELECT file_id, attributes FROM vector_store_files "
                "WHERE vector_store_id IN (:ids) AND status = 'completed'",
                ids=vector_store_ids,
            )
        return {row["file_id"]: loads(row["attributes"]) for row in rows}

    async def update_attributes(self, vector_store_id: str, file_id: str, attributes: dict[str, Any]) -> None:
        async with self.db.write() as transaction:
            await transaction.run(
                "UPDATE vector_store_files SET attributes = :attributes "
                "WHERE vector_store_id = :store AND file_id = :file",
                attributes=dumps(attributes),
                store=vector_store_id,
                file=file_id,
            )

    async def remove_file(self, vector_store_id: str, file_id: str) -> bool:
        async with self.db.write() as transaction:
            await transaction.run(
                "DELETE FROM vector_store_chunks WHERE vector_store_id = :store AND file_id = :file",
                store=vector_store_id,
                file=file_id,
            )
            return bool(
                await transaction.run(
                    "DELETE FROM vector_store_files WHERE vector_store_id = :store AND file_id = :file",
                    store=vector_store_id,
                    file=file_id,
                )
            )

    async def chunked(self, vector_store_id: str, file_id: str, count: int) -> bool:
        """The file's chunks are all kept: `count` of them. False when its ingestion ended
        meanwhile (removed, cancelled)."""
        async with self.db.write() as transaction:
            return bool(
                await transaction.run(
                    "UPDATE vector_store_files SET chunk_count = :count "
                    "WHERE vector_store_id = :store AND file_id = :file AND status = 'in_progress'",
                    count=count,
                    store=vector_store_id,
                    file=file_id,
                )
            )

    async def settle(
        self, vector_store_id: str, file_id: str, status: str, last_error: dict[str, str] | None = None
    ) -> bool:
        """End a file's ingestion, if it is still in progress; its usage is its chunks' text."""
        async with self.db.write() as transaction:
            usage = await transaction.value(
                "SELECT sum(length(text)) FROM vector_store_chunks WHERE vector_store_id = :store AND file_id = :file",
                store=vector_store_id,
                file=file_id,
            )
            return bool(
                await transaction.run(
                    "UPDATE vector_store_files SET status = :status, last_error = :error, usage_bytes = :usage "
                    "WHERE vector_store_id = :store AND file_id = :file AND status = 'in_progress'",
                    status=status,
                    error=dumps(last_error) if last_error else None,
                    usage=int(usage or 0),
                    store=vector_store_id,
                    file=file_id,
                )
            )

    async def batch(self, batch_id: str) -> BatchRow | None:
        async with self.db.read() as transaction:
            found = await transaction.one(
                "SELECT id, vector_store_id, created_at, cancelled FROM vector_store_file_batches WHERE id = :id",
                id=batch_id,
            )
            if found is None:
                return None
            counts = await transaction.all(
                "SELECT status, count(*) AS n FROM vector_store_files WHERE batch_id = :id GROUP BY status", id=batch_id
            )
        return BatchRow(
            found["id"], found["vector_store_id"], found["created_at"], bool(found["cancelled"]), counts_of(counts)
        )

    async def cancel_batch(self, batch_id: str) -> list[str]:
        """The batch's files still in progress become `cancelled`; their ids."""
        async with self.db.write() as transaction:
            await transaction.run("UPDATE vector_store_file_batches SET cancelled = TRUE WHERE id = :id", id=batch_id)
            running = await transaction.all(
                "SELECT file_id FROM vector_store_files WHERE batch_id = :id AND status = 'in_progress'", id=batch_id
            )
            await transaction.run(
                "UPDATE vector_store_files SET status = 'cancelled' WHERE batch_id = :id AND status = 'in_progress'",
                id=batch_id,
            )
        return [row["file_id"] for row in running]

    async def unfinished(self, created_before: int, limit: int = 100) -> list[tuple[VectorStoreRow, str]]:
        """Files in progress since before `created_before` (oldest first), with their store."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT f.file_id, {', '.join('s.' + column for column in STORE_COLUMNS.split(', '))} "
                "FROM vector_store_files f JOIN vector_stores s ON s.id = f.vector_store_id "
                "WHERE f.status = 'in_progress' AND f.created_at < :before ORDER BY f.created_at LIMIT :limit",
                before=created_before,
                limit=limit,
            )
        return [
            (
                VectorStoreRow(
                    row["id"],
                    row["project"],
                    row["name"],
                    loads(row["metadata"]),
                    row["created_at"],
                    row["last_active_at"],
                    row["expires_after_days"],
                    row["embedding_model"],
                ),
                row["file_id"],
            )
            for row in rows
        ]

    async def expired(self, now: int, limit: int = 100) -> list[str]:
        """Stores idle for longer than their `expires_after` allows."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT id FROM vector_stores WHERE expires_after_days IS NOT NULL "
                "AND last_active_at + expires_after_days * 86400 < :now LIMIT :limit",
                now=now,
                limit=limit,
            )
        return [row["id"] for row in rows]
