"""The ingestion workflow's activities: read and chunk a file (once), embed a batch of its
chunks (only those not embedded yet: a batch retried after a crash embeds again at most what
the crashed attempt embedded), and settle the file's status.

A file that cannot be read fails at once (`UnreadableFileError`, never retried). An
embeddings backend that is down or at its limit is retried by Temporal; one that waits for
capacity in the upstream budget says how long (`next_retry_delay`); one that refuses fails
the file.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

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
    SettleFileInput,
    SettleFileResult,
)
from retrieval.chunking import chunks_of
from retrieval.embedder import Embedder
from retrieval.parsing import text_of
from store.repository import ResponseRepository
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
    def __init__(self, repository: ResponseRepository, embedder: Embedder) -> None:
        self.repository = repository
        self.embedder = embedder

    @activity.defn(name=activity_names.CHUNK_FILE)
    async def chunk_file(self, request: ChunkFileInput) -> ChunkFileResult:
        entry = await self.repository.vector_stores.file(request.vector_store_id, request.file_id)
        content = await self.repository.files.content(request.file_id)
        if entry is None or entry.status != "in_progress" or content is None:
            return ChunkFileResult(chunks=0, gone=True)
        filename = await self.repository.files.filename(request.file_id)
        static = entry.chunking_strategy["static"]
        try:
            async with heartbeating():  # a large PDF takes a while: in a thread, beside the heartbeats
                text = await asyncio.to_thread(text_of, filename or "", content)
                chunks = await asyncio.to_thread(
                    chunks_of, text, static["max_chunk_size_tokens"], static["chunk_overlap_tokens"]
                )
        except UnreadableFileError as error:
            raise ApplicationError(error.message, error.code, type=type(error).__name__, non_retryable=True) from error
        return ChunkFileResult(
            chunks=await self.repository.chunks.put(request.vector_store_id, request.file_id, chunks)
        )

    @activity.defn(name=activity_names.EMBED_CHUNKS)
    async def embed_chunks(self, request: EmbedChunksInput) -> EmbedChunksResult:
        pending = await self.repository.chunks.unembedded(
            request.vector_store_id, request.file_id, request.start, request.end
        )
        if not pending:
            return EmbedChunksResult(embedded=0)
        try:
            async with heartbeating():
                vectors = await self.embedder.embed(
                    [text for _, text in pending], request.project, model=request.embedding_model
                )
        except CapacityWaitError as error:  # the budget has room later: come back then
            raise ApplicationError(
                str(error), type=type(error).__name__, next_retry_delay=timedelta(seconds=max(0.1, error.wait_seconds))
            ) from error
        except RateLimitedUpstreamError as error:
            delay = timedelta(seconds=error.retry_after) if error.retry_after else None
            raise ApplicationError(error.message, type=type(error).__name__, next_retry_delay=delay) from error
        except RetryableUpstreamError as error:
            raise ApplicationError(error.message, type=type(error).__name__) from error
        except UpstreamError as error:  # refused, misconfigured: retrying cannot mend it
            raise ApplicationError(error.message, type=type(error).__name__, non_retryable=True) from error
        await self.repository.chunks.embed(
            request.vector_store_id,
            request.file_id,
            {position: vector for (position, _), vector in zip(pending, vectors, strict=True)},
        )
        metrics.chunks_embedded(len(pending))
        return EmbedChunksResult(embedded=len(pending))

    @activity.defn(name=activity_names.SETTLE_FILE)
    async def settle_file(self, request: SettleFileInput) -> SettleFileResult:
        error = (
            {"code": request.error_code, "message": (request.error_message or "")[:1000]}
            if request.error_code
            else None
        )
        settled = await self.repository.vector_stores.settle(
            request.vector_store_id, request.file_id, request.status, error
        )
        if settled:
            metrics.file_ingested(request.status)
        return SettleFileResult(settled=settled)
