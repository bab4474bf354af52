"""The chunks of the files in vector stores, their embeddings, and the nearest of them to a
query: on SQLite through sqlite-vec's `vec_distance_cosine` (`store/vector_functions.py`),
on PostgreSQL as an exact dot product in SQL over `real[]` (embeddings are unit length, so
it is their cosine). Both scan every embedded chunk of the stores searched: exact, and
linear in their size (`docs/file-search.md` has the figures)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.chunks import Chunk
from store.database import Database
from store.vector_bytes import to_bytes

PAGE_CHUNKS = 100
"""Chunks a page of a file's content holds at most."""


@dataclass(frozen=True)
class Nearest:
    vector_store_id: str
    file_id: str
    position: int
    text: str
    similarity: float


class Chunks:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def clear(self, vector_store_id: str, file_id: str) -> None:
        """Forget what an earlier, unfinished reading of the file kept."""
        async with self.db.write() as transaction:
            await transaction.run(
                "DELETE FROM vector_store_chunks WHERE vector_store_id = :store AND file_id = :file",
                store=vector_store_id,
                file=file_id,
            )

    async def add(self, vector_store_id: str, file_id: str, first_position: int, chunks: list[Chunk]) -> bool:
        """Keep `chunks` from `first_position` on, if the file is still being ingested in the
        store (False, keeping nothing, once it was removed or its ingestion ended). The file's
        row is held meanwhile, so a removal waits for this write and then removes it too."""
        held = " FOR UPDATE" if self.db.dialect == "postgresql" else ""
        async with self.db.write() as transaction:
            status = await transaction.value(
                f"SELECT status FROM vector_store_files WHERE vector_store_id = :store AND file_id = :file{held}",
                store=vector_store_id,
                file=file_id,
            )
            if status != "in_progress":
                return False
            await transaction.run_many(
                "INSERT INTO vector_store_chunks (vector_store_id, file_id, position, text, tokens) "
                "VALUES (:store, :file, :position, :text, :tokens)",
                [
                    {
                        "store": vector_store_id,
                        "file": file_id,
                        "position": position,
                        "text": chunk.text,
                        "tokens": chunk.tokens,
                    }
                    for position, chunk in enumerate(chunks, start=first_position)
                ],
            )
        return True

    async def unembedded(self, vector_store_id: str, file_id: str, after: int, limit: int) -> list[tuple[int, str]]:
        """The first `limit` chunks after position `after` without an embedding yet."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT position, text FROM vector_store_chunks WHERE vector_store_id = :store AND file_id = :file "
                "AND position > :after AND embedding IS NULL ORDER BY position LIMIT :limit",
                store=vector_store_id,
                file=file_id,
                after=after,
                limit=limit,
            )
        return [(row["position"], row["text"]) for row in rows]

    async def unembedded_between(
        self, vector_store_id: str, file_id: str, start: int, end: int
    ) -> list[tuple[int, str]]:
        """The chunks in positions `start` to `end` (exclusive) without an embedding yet (the
        batches of ingestions that began before they resumed where they stopped)."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT position, text FROM vector_store_chunks WHERE vector_store_id = :store AND file_id = :file "
                "AND position >= :start AND position < :end AND embedding IS NULL ORDER BY position",
                store=vector_store_id,
                file=file_id,
                start=start,
                end=end,
            )
        return [(row["position"], row["text"]) for row in rows]

    def _vector(self, vector: Sequence[float]) -> bytes | list[float]:
        return to_bytes(vector) if self.db.dialect == "sqlite" else list(vector)

    async def embed(self, vector_store_id: str, file_id: str, vectors: dict[int, Sequence[float]]) -> None:
        async with self.db.write() as transaction:
            await transaction.run_many(
                "UPDATE vector_store_chunks SET embedding = :embedding WHERE vector_store_id = :store "
                "AND file_id = :file AND position = :position",
                [
                    {"embedding": self._vector(vector), "store": vector_store_id, "file": file_id, "position": position}
                    for position, vector in vectors.items()
                ],
            )

    async def nearest(
        self, vector_store_ids: list[str], file_ids: list[str] | None, query: Sequence[float], limit: int
    ) -> list[Nearest]:
        """The `limit` embedded chunks nearest to `query`, of these stores' completed files (of
        `file_ids` only, if given): a file still being ingested, or gone meanwhile, is not searched."""
        probe: bytes | str  # float32s for sqlite-vec; a `real[]` literal for PostgreSQL
        if self.db.dialect == "sqlite":
            similarity = "1.0 - vec_distance_cosine(c.embedding, :probe)"
            same_size = "length(c.embedding) = :size"
            size, probe = len(query) * 4, to_bytes(query)
        else:  # the query as text: a list parameter stands for an `IN` list here
            similarity = "(SELECT sum(a * b) FROM unnest(c.embedding, CAST(CAST(:probe AS text) AS real[])) AS t(a, b))"
            same_size = "cardinality(c.embedding) = :size"
            size, probe = len(query), "{" + ",".join(map(repr, query)) + "}"
        where = f"c.vector_store_id IN (:stores) AND c.embedding IS NOT NULL AND {same_size}"
        params = {"stores": vector_store_ids, "probe": probe, "size": size, "limit": limit}
        if file_ids is not None:
            where, params["files"] = where + " AND c.file_id IN (:files)", file_ids
        async with self.db.scan() as transaction:  # linear in the stores' chunks: off the loop
            rows = await transaction.all(
                f"SELECT c.vector_store_id, c.file_id, c.position, c.text, {similarity} AS similarity "
                "FROM vector_store_chunks c JOIN vector_store_files f ON f.vector_store_id = c.vector_store_id "
                f"AND f.file_id = c.file_id AND f.status = 'completed' WHERE {where} "
                "ORDER BY similarity DESC, c.file_id, c.position LIMIT :limit",
                **params,
            )
        return [
            Nearest(
                row["vector_store_id"], row["file_id"], row["position"], row["text"], float(row["similarity"] or 0.0)
            )
            for row in rows
        ]

    async def texts_page(
        self, vector_store_id: str, file_id: str, after: int, max_chars: int
    ) -> tuple[list[tuple[int, str]], bool]:
        """The chunks after position `after`, in order, as many as fit in `max_chars` (at least
        one), with their positions; and whether more follow."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT position, text FROM vector_store_chunks WHERE vector_store_id = :store "
                "AND file_id = :file AND position > :after ORDER BY position LIMIT :limit",
                store=vector_store_id,
                file=file_id,
                after=after,
                limit=PAGE_CHUNKS + 1,
            )
        page: list[tuple[int, str]] = []
        used = 0
        for row in rows[:PAGE_CHUNKS]:
            if page and used + len(row["text"]) > max_chars:
                return page, True
            page.append((row["position"], row["text"]))
            used += len(row["text"])
        return page, len(rows) > PAGE_CHUNKS
