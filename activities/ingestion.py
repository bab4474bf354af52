"""The ingestion workflow's activities: read and chunk a file (once: the count is kept, so an
ingestion that starts again goes on from its chunks), embed the next batch of its chunks (only
those not embedded yet: a batch retried after a crash embeds again at most what the crashed
attempt embedded), and settle the file's status.

The file is read in a process of its own, within its limits (`file_search/reader.py`); its
chunks are kept a batch at a time, each batch only while the file is still being ingested in
the store (a file removed meanwhile keeps nothing). A file that cannot be read fails at once
(`UnreadableFileError`, never retried). An embeddings backend that is down or at its limit is
retried by Temporal; one that waits for capacity in the upstream budget says how long
(`next_retry_delay`); one that refuses fails the file.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.capacity_waits import capacity_wait
from file_search.embedder import Embedder
from file_search.library import Library
from file_search.reader import ReaderStoppedError, read_chunks
from models import activity_names
from models.errors import (
    CapacityWaitError,
    RateLimitedUpstreamError,
    RetryableUpstreamError,
    UnreadableFileError,
    UpstreamError,
)
from models.ingestion import (
    ChunkFileInput,
    ChunkFileResult,
    EmbedChunksInput,
    EmbedChunksResult,
    EmbedNextChunksInput,
    EmbedNextChunksResult,
    SettleFileInput,
    SettleFileResult,
)
from telemetry import metrics


@contextlib.asynccontextmanager
async def heartbeating() -> AsyncIterator[None]:
    """Heartbeat while the step runs: a worker that dies mid-step is noticed within the
    heartbeat timeout (seconds), not the step's whole start-to-close timeout."""
    timeout = activity.info().heartbeat_timeout
    every = timeout.total_seconds() / 3 if timeout else 5.0

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    beating = asyncio.create_task(beat())
    try:
        yield
    finally:
        beating.cancel()


class IngestionActivities:
    def __init__(self, *, library: Library, embedder: Embedder) -> None:
        self.library = library
        self.embedder = embedder

    @activity.defn(name=activity_names.CHUNK_FILE)
    async def chunk_file(self, request: ChunkFileInput) -> ChunkFileResult:
        store, file_id = request.vector_store_id, request.file_id
        entry = await self.library.vector_stores.file(store, file_id)
        if entry is None or entry.status != "in_progress":
            return ChunkFileResult(chunks=0, gone=True)
        if entry.chunk_count is not None:  # chunked by an earlier run: its chunks are there
            return ChunkFileResult(chunks=entry.chunk_count)
        found = await self.library.files.find(file_id)
        if found is None:
            return ChunkFileResult(chunks=0, gone=True)
        static = entry.chunking_strategy["static"]
        await self.library.chunks.clear(store, file_id)  # what an attempt that died kept
        count = 0
        try:
            async with heartbeating():
                batches = read_chunks(
                    found.filename,
                    self.library.files.parts(file_id),
                    static["max_chunk_size_tokens"],
                    static["chunk_overlap_tokens"],
                )
                async with contextlib.aclosing(batches):
                    async for batch in batches:
                        if not await self.library.chunks.add(store, file_id, count, batch):
                            return ChunkFileResult(chunks=0, gone=True)
                        count += len(batch)
        except UnreadableFileError as error:
            raise ApplicationError(error.message, error.code, type=type(error).__name__, non_retryable=True) from error
        except ReaderStoppedError as error:
            raise ApplicationError(str(error), type=type(error).__name__) from error
        if not await self.library.vector_stores.chunked(store, file_id, count):
            return ChunkFileResult(chunks=0, gone=True)
        return ChunkFileResult(chunks=count)

    @activity.defn(name=activity_names.EMBED_NEXT_CHUNKS)
    async def embed_next_chunks(self, request: EmbedNextChunksInput) -> EmbedNextChunksResult:
        pending = await self.library.chunks.unembedded(
            request.vector_store_id, request.file_id, request.after, request.limit
        )
        await self._embed(request.vector_store_id, request.file_id, request.project, request.embedding_model, pending)
        return EmbedNextChunksResult(
            embedded=len(pending),
            last_position=pending[-1][0] if pending else request.after,
            more=len(pending) == request.limit,
        )

    @activity.defn(name=activity_names.EMBED_CHUNKS)
    async def embed_chunks(self, request: EmbedChunksInput) -> EmbedChunksResult:
        pending = await self.library.chunks.unembedded_between(
            request.vector_store_id, request.file_id, request.start, request.end
        )
        await self._embed(request.vector_store_id, request.file_id, request.project, request.embedding_model, pending)
        return EmbedChunksResult(embedded=len(pending))

    async def _embed(
        self, vector_store_id: str, file_id: str, project: str, model: str, pending: Sequence[tuple[int, str]]
    ) -> None:
        if not pending:
            return
        try:
            async with heartbeating():
                vectors = await self.embedder.embed([text for _, text in pending], project, model=model)
        except CapacityWaitError as error:  # the budget has room later: come back then
            raise capacity_wait(error) from error
        except RateLimitedUpstreamError as error:
            delay = timedelta(seconds=error.retry_after) if error.retry_after else None
            raise ApplicationError(error.message, type=type(error).__name__, next_retry_delay=delay) from error
        except RetryableUpstreamError as error:
            raise ApplicationError(error.message, type=type(error).__name__) from error
        except UpstreamError as error:  # refused, misconfigured: retrying cannot mend it
            raise ApplicationError(error.message, type=type(error).__name__, non_retryable=True) from error
        await self.library.chunks.embed(
            vector_store_id,
            file_id,
            {position: vector for (position, _), vector in zip(pending, vectors, strict=True)},
        )
        metrics.chunks_embedded(len(pending))

    @activity.defn(name=activity_names.SETTLE_FILE)
    async def settle_file(self, request: SettleFileInput) -> SettleFileResult:
        error = (
            {"code": request.error_code, "message": (request.error_message or "")[:1000]}
            if request.error_code
            else None
        )
        settled = await self.library.vector_stores.settle(
            request.vector_store_id, request.file_id, request.status, error
        )
        if settled:
            metrics.file_ingested(request.status)
        return SettleFileResult(settled=settled)
