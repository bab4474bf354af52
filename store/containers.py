"""Containers (`/v1/containers`) and their files, in their project.

A container's row says where it lives: `host` is the worker host that keeps its files and runs
its commands (`sandbox/containers.py`), set when a command first needs it (`place`), kept for
its life. Its files are kept here too, their bytes in `file_parts` as uploads' are (read with
`Files.parts`, `store/files.py`):
what a client uploads waits here until its host copies it in (`synced` false), what code
writes under `/mnt/data` comes back here after each command, so any API process serves
`/files/{id}/content` whatever host the container is on.

A container idle past its `expires_after` is expired by its host (never while a command of
it runs); a deleted one is gone from every list at once, and its host removes its files.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from models.errors import ContainerEndedError
from models.quotas import ProjectQuota, ProjectQuotas
from store import quota
from store.codec import dumps, loads
from store.database import Database, Row, Transaction
from store.paging import page_of_rows

Order = Literal["asc", "desc"]
COLUMNS = (
    "id, project, name, memory_limit, expires_after_minutes, network_policy, host, status, created_at, last_active_at"
)
FILE_COLUMNS = "id, container_id, path, bytes, source, created_at, synced"


@dataclass(frozen=True)
class ContainerRow:
    id: str
    project: str
    name: str
    memory_limit: str
    expires_after_minutes: int
    network_policy: dict[str, Any]
    host: str | None
    status: str
    created_at: int
    last_active_at: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "container",
            "created_at": self.created_at,
            "name": self.name,
            "status": self.status,
            "expires_after": {"anchor": "last_active_at", "minutes": self.expires_after_minutes},
            "last_active_at": self.last_active_at,
            "memory_limit": self.memory_limit,
            "network_policy": self.network_policy,
        }


@dataclass(frozen=True)
class ContainerFileRow:
    id: str
    container_id: str
    path: str
    bytes: int
    source: str
    created_at: int
    synced: bool

    def to_wire(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "container.file",
            "bytes": self.bytes,
            "container_id": self.container_id,
            "created_at": self.created_at,
            "path": self.path,
            "source": self.source,
        }


def _container(row: Row) -> ContainerRow:
    return ContainerRow(
        row["id"],
        row["project"],
        row["name"],
        row["memory_limit"],
        row["expires_after_minutes"],
        loads(row["network_policy"]),
        row["host"],
        row["status"],
        row["created_at"],
        row["last_active_at"],
    )


def _file(row: Row) -> ContainerFileRow:
    return ContainerFileRow(
        row["id"], row["container_id"], row["path"], row["bytes"], row["source"], row["created_at"], bool(row["synced"])
    )


class Containers:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, row: ContainerRow, quotas: ProjectQuotas) -> None:
        async with self.db.write() as transaction:
            await quota.hold(transaction, self.db.dialect, ProjectQuota.CONTAINERS, row.project)
            count = await transaction.value(
                "SELECT count(*) FROM containers WHERE project = :project AND status = 'running'", project=row.project
            )
            quota.check(quotas, ProjectQuota.CONTAINERS, int(count), 1)
            await transaction.run(
                f"INSERT INTO containers ({COLUMNS}, sort_key) VALUES (:id, :project, :name, :memory_limit, "
                ":minutes, :network_policy, :host, :status, :created_at, :last_active_at, :sort_key)",
                id=row.id,
                project=row.project,
                name=row.name,
                memory_limit=row.memory_limit,
                minutes=row.expires_after_minutes,
                network_policy=dumps(row.network_policy),
                host=row.host,
                status=row.status,
                created_at=row.created_at,
                last_active_at=row.last_active_at,
                sort_key=time.time_ns() // 1000,
            )

    async def get(self, container_id: str, project: str | None = None) -> ContainerRow | None:
        """The container (of `project`, when given), deleted ones not."""
        where = "id = :id AND status != 'deleted'" + (" AND project = :project" if project is not None else "")
        params = {"id": container_id} | ({"project": project} if project is not None else {})
        async with self.db.read() as transaction:
            found = await transaction.one(f"SELECT {COLUMNS} FROM containers WHERE {where}", **params)
        return None if found is None else _container(found)

    async def page(
        self, project: str, name: str | None, *, after: str | None, limit: int, order: Order
    ) -> tuple[list[ContainerRow], bool]:
        where, params = "project = :project AND status != 'deleted'", {"project": project}
        if name is not None:
            where, params["name"] = where + " AND name = :name", name
        async with self.db.read() as transaction:
            rows, more = await page_of_rows(
                transaction, "containers", COLUMNS, where, params, after=after, limit=limit, order=order
            )
        return [_container(row) for row in rows], more

    async def place(self, container_id: str, host: str) -> str | None:
        """Where the container lives: `host`, if it lived nowhere yet; None when it is gone."""
        async with self.db.write() as transaction:
            await transaction.run(
                "UPDATE containers SET host = :host WHERE id = :id AND host IS NULL AND status = 'running'",
                host=host,
                id=container_id,
            )
            found = await transaction.one("SELECT host, status FROM containers WHERE id = :id", id=container_id)
        if found is None or found["status"] != "running":
            return None
        placed: str = found["host"]
        return placed

    async def touch(self, container_id: str, now: int | None = None) -> None:
        """It was used: its `expires_after` counts from now."""
        async with self.db.write() as transaction:
            await transaction.run(
                "UPDATE containers SET last_active_at = :now WHERE id = :id",
                now=int(now if now is not None else time.time()),
                id=container_id,
            )

    async def end(self, container_id: str, status: Literal["expired", "deleted"]) -> bool:
        """It expired or was deleted: its files leave the store (its host removes the rest)."""
        async with self.db.write() as transaction:
            changed = await transaction.run(
                "UPDATE containers SET status = :status WHERE id = :id AND status = 'running'",
                status=status,
                id=container_id,
            )
            await _forget_files(transaction, container_id)
        return bool(changed)

    async def discard(self, container_id: str) -> None:
        """A container made for a request that was then refused: gone with its files, as if it
        had never been (no host has it yet)."""
        async with self.db.write() as transaction:
            await _forget_files(transaction, container_id)
            await transaction.run("DELETE FROM containers WHERE id = :id", id=container_id)

    async def of_host(self, host: str) -> list[ContainerRow]:
        """The containers this host keeps, deleted or expired ones too (to remove)."""
        async with self.db.read() as transaction:
            rows = await transaction.all(f"SELECT {COLUMNS} FROM containers WHERE host = :host", host=host)
        return [_container(row) for row in rows]

    async def expire_idle(self, now: int, grace_seconds: int = 0, *, unplaced_only: bool = False) -> list[str]:
        """Expire the running containers (that live nowhere yet, with `unplaced_only`) idle past
        their `expires_after` and `grace_seconds` more; their ids."""
        where = "status = 'running' AND last_active_at + expires_after_minutes * 60 + :grace < :now"
        params: dict[str, Any] = {"grace": grace_seconds, "now": now}
        if unplaced_only:
            where += " AND host IS NULL"
        async with self.db.write() as transaction:
            ids = [row["id"] for row in await transaction.all(f"SELECT id FROM containers WHERE {where}", **params)]
            for container_id in ids:
                await transaction.run(
                    "UPDATE containers SET status = 'expired' WHERE id = :id AND status = 'running'", id=container_id
                )
                await _forget_files(transaction, container_id)
        return ids

    async def forget_ended(self, before: int) -> int:
        """Forget containers that ended (expired or deleted) and were last used before `before`
        (a host that still keeps one removes it: it is no longer its), with their files and
        their files' bytes; and any container file whose container is gone (a row this chore
        once left behind: it counted against no quota, and nothing removed it)."""
        ended = "SELECT id FROM containers WHERE status != 'running' AND last_active_at < :before"
        orphaned = "SELECT id FROM container_files WHERE container_id NOT IN (SELECT id FROM containers)"
        async with self.db.write() as transaction:
            await transaction.run(
                f"DELETE FROM file_parts WHERE file_id IN (SELECT id FROM container_files WHERE container_id IN ({ended}))",
                before=before,
            )
            await transaction.run(f"DELETE FROM container_files WHERE container_id IN ({ended})", before=before)
            gone = await transaction.run(
                "DELETE FROM containers WHERE status != 'running' AND last_active_at < :before", before=before
            )
            await transaction.run(f"DELETE FROM file_parts WHERE file_id IN ({orphaned})")
            await transaction.run(f"DELETE FROM container_files WHERE id IN ({orphaned})")
        return int(gone or 0)

    async def forget(self, container_id: str) -> None:
        """Its host removed it: the row goes."""
        async with self.db.write() as transaction:
            await _forget_files(transaction, container_id)
            await transaction.run("DELETE FROM containers WHERE id = :id AND status != 'running'", id=container_id)

    async def lost(self, host: str) -> int:
        """A host is gone with its containers: they are expired; how many."""
        async with self.db.write() as transaction:
            ids = [
                row["id"]
                for row in await transaction.all(
                    "SELECT id FROM containers WHERE host = :host AND status = 'running'", host=host
                )
            ]
            for container_id in ids:
                await transaction.run("UPDATE containers SET status = 'expired' WHERE id = :id", id=container_id)
                await _forget_files(transaction, container_id)
        return len(ids)

    # ---- files ------------------------------------------------------------------------------

    async def add_file(self, row: ContainerFileRow, quotas: ProjectQuotas) -> ContainerFileRow:
        """Keep a file of the container (its parts are written: `Files.write_parts`), in place
        of one at the same path; `QuotaExceededError` when the container holds as many as it may,
        or its project as many bytes (its uploads' and its containers' files' together);
        `ContainerEndedError` when it is no longer running."""
        async with self.db.write() as transaction:
            await quota.hold(transaction, self.db.dialect, ProjectQuota.CONTAINER_FILES, row.container_id)
            project = await transaction.value(
                "SELECT project FROM containers WHERE id = :id AND status = 'running'", id=row.container_id
            )
            if project is None:  # expired or deleted meanwhile: no file of its is kept, uncounted for ever
                raise ContainerEndedError(row.container_id)
            replaced = await transaction.value(
                "SELECT id FROM container_files WHERE container_id = :container AND path = :path",
                container=row.container_id,
                path=row.path,
            )
            if replaced is not None:
                await transaction.run("DELETE FROM container_files WHERE id = :id", id=replaced)
                await transaction.run("DELETE FROM file_parts WHERE file_id = :id", id=replaced)
            count = await transaction.value(
                "SELECT count(*) FROM container_files WHERE container_id = :container", container=row.container_id
            )
            quota.check(quotas, ProjectQuota.CONTAINER_FILES, int(count), 1, param="file")
            await quota.check_bytes(transaction, self.db.dialect, quotas, str(project), row.bytes, param="file")
            await transaction.run(
                f"INSERT INTO container_files ({FILE_COLUMNS}, sort_key) VALUES (:id, :container, :path, :bytes, "
                ":source, :created_at, :synced, :sort_key)",
                id=row.id,
                container=row.container_id,
                path=row.path,
                bytes=row.bytes,
                source=row.source,
                created_at=row.created_at,
                synced=row.synced,
                sort_key=time.time_ns() // 1000,
            )
        return row

    async def file(self, container_id: str, file_id: str) -> ContainerFileRow | None:
        async with self.db.read() as transaction:
            found = await transaction.one(
                f"SELECT {FILE_COLUMNS} FROM container_files WHERE id = :id AND container_id = :container",
                id=file_id,
                container=container_id,
            )
        return None if found is None else _file(found)

    async def file_size(self, file_id: str) -> int | None:
        async with self.db.read() as transaction:
            found = await transaction.value("SELECT bytes FROM container_files WHERE id = :id", id=file_id)
        return None if found is None else int(found)

    async def files(self, container_id: str) -> list[ContainerFileRow]:
        async with self.db.read() as transaction:
            rows = await transaction.all(
                f"SELECT {FILE_COLUMNS} FROM container_files WHERE container_id = :container ORDER BY sort_key",
                container=container_id,
            )
        return [_file(row) for row in rows]

    async def files_page(
        self, container_id: str, *, after: str | None, limit: int, order: Order
    ) -> tuple[list[ContainerFileRow], bool]:
        async with self.db.read() as transaction:
            rows, more = await page_of_rows(
                transaction,
                "container_files",
                FILE_COLUMNS,
                "container_id = :container",
                {"container": container_id},
                after=after,
                limit=limit,
                order=order,
            )
        return [_file(row) for row in rows], more

    async def synced(self, file_id: str) -> None:
        """Its host has it on disk."""
        async with self.db.write() as transaction:
            await transaction.run("UPDATE container_files SET synced = TRUE WHERE id = :id", id=file_id)

    async def delete_file(self, container_id: str, file_id: str) -> bool:
        async with self.db.write() as transaction:
            gone = await transaction.run(
                "DELETE FROM container_files WHERE id = :id AND container_id = :container",
                id=file_id,
                container=container_id,
            )
            if gone:
                await transaction.run("DELETE FROM file_parts WHERE file_id = :id", id=file_id)
        return bool(gone)


async def _forget_files(transaction: Transaction, container_id: str) -> None:
    await transaction.run(
        "DELETE FROM file_parts WHERE file_id IN (SELECT id FROM container_files WHERE container_id = :container)",
        container=container_id,
    )
    await transaction.run("DELETE FROM container_files WHERE container_id = :container", container=container_id)
