"""`FileIngestion`: one file into one vector store, durably: read and chunk it, embed its
chunks a batch at a time, settle its status.

Each step is an activity that can run again without harm (`activities/ingestion.py`): a
worker killed mid-batch loses nothing, and the next worker embeds only the chunks that have
no embedding yet. An embeddings backend that is down or at its limit is waited out, for
up to `EMBED_GIVE_UP` a batch; a file that cannot be read, or a backend that refuses, fails
the file with `last_error`. A cancelled batch, a deleted store or a deleted file cancels the
workflow (its row is settled, or gone, by whoever cancelled it).

Its history stays small whatever the file: each step asks for the next batch after the last
one (not for a range counted from the start), and after `BATCHES_PER_RUN` steps the workflow
continues as new, carrying where it is. An ingestion started again (the sweep restarts one
whose workflow is gone) reads the file only if it was never wholly chunked, and embeds only
what has no embedding.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.errors import StoreRefusedError, UnreadableFileError
    from models.ingestion import (
        EMBED_BATCH,
        INGESTION_WORKFLOW,
        ChunkFileInput,
        ChunkFileResult,
        EmbedChunksInput,
        EmbedChunksResult,
        EmbedNextChunksInput,
        EmbedNextChunksResult,
        FileIngestionInput,
        SettleFileInput,
        SettleFileResult,
    )
    from workflows import patches
    from workflows.failures import application_failure

HEARTBEAT_TIMEOUT = timedelta(seconds=10)
"""A step whose worker died is retried this soon (its heartbeats stopped)."""
CHUNK_TIMEOUT = timedelta(minutes=10)
"""Reading a file: its reader's wall-clock limit (`IngestionLimits.reader`), and its writes."""
EMBED_GIVE_UP = timedelta(hours=6)
"""How long one batch may wait for its embeddings backend (down, or at its limit)."""
STEP_RETRIES = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=20,
    non_retryable_error_types=[UnreadableFileError.__name__, StoreRefusedError.__name__],
)
EMBED_RETRIES = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=0,
    non_retryable_error_types=[StoreRefusedError.__name__],
)


@workflow.defn(name=INGESTION_WORKFLOW)
class FileIngestionWorkflow:
    @workflow.run
    async def run(self, job: FileIngestionInput) -> str:
        try:
            if patches.taken(patches.INGESTION_RESUMES):
                if await self._ingest(job) == "gone":
                    return "gone"
            elif await self._ingest_by_ranges(job) == "gone":
                return "gone"
            settle = SettleFileInput(vector_store_id=job.vector_store_id, file_id=job.file_id, status="completed")
        except ActivityError as error:
            if is_cancelled_exception(error):
                raise
            failure = application_failure(error)
            unreadable = failure is not None and failure.type == UnreadableFileError.__name__
            code = failure.details[0] if failure is not None and unreadable and failure.details else "server_error"
            message = failure.message if failure is not None else str(error.cause or error)
            settle = SettleFileInput(
                vector_store_id=job.vector_store_id,
                file_id=job.file_id,
                status="failed",
                error_code=code,
                error_message=message,
            )
        await workflow.execute_activity(
            activity_names.SETTLE_FILE,
            settle,
            result_type=SettleFileResult,
            start_to_close_timeout=timedelta(seconds=30),
            retry_policy=STEP_RETRIES,
        )
        return settle.status

    async def _ingest(self, job: FileIngestionInput) -> str:
        """Chunk the file (unless an earlier run did), then embed the next batch until none is
        left, continuing as new every `batches_per_run` batches."""
        if not job.chunked:
            chunked = await workflow.execute_activity(
                activity_names.CHUNK_FILE,
                ChunkFileInput(vector_store_id=job.vector_store_id, file_id=job.file_id),
                result_type=ChunkFileResult,
                start_to_close_timeout=CHUNK_TIMEOUT,
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                retry_policy=STEP_RETRIES,
            )
            if chunked.gone:
                return "gone"
        after = job.embedded_through
        for _ in range(job.batches_per_run):
            step = await workflow.execute_activity(
                activity_names.EMBED_NEXT_CHUNKS,
                EmbedNextChunksInput(
                    vector_store_id=job.vector_store_id,
                    file_id=job.file_id,
                    project=job.project,
                    embedding_model=job.embedding_model,
                    after=after,
                ),
                result_type=EmbedNextChunksResult,
                start_to_close_timeout=timedelta(minutes=2),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                schedule_to_close_timeout=EMBED_GIVE_UP,
                retry_policy=EMBED_RETRIES,
            )
            after = step.last_position
            if not step.more:
                return "embedded"
        workflow.continue_as_new(job.model_copy(update={"chunked": True, "embedded_through": after}))

    async def _ingest_by_ranges(self, job: FileIngestionInput) -> str:
        """How ingestions that began before `INGESTION_RESUMES` go on: a batch a range of
        positions counted from the start, in one run."""
        chunked = await workflow.execute_activity(
            activity_names.CHUNK_FILE,
            ChunkFileInput(vector_store_id=job.vector_store_id, file_id=job.file_id),
            result_type=ChunkFileResult,
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=STEP_RETRIES,
        )
        if chunked.gone:
            return "gone"
        for start in range(0, chunked.chunks, EMBED_BATCH):
            await workflow.execute_activity(
                activity_names.EMBED_CHUNKS,
                EmbedChunksInput(
                    vector_store_id=job.vector_store_id,
                    file_id=job.file_id,
                    project=job.project,
                    embedding_model=job.embedding_model,
                    start=start,
                    end=start + EMBED_BATCH,
                ),
                result_type=EmbedChunksResult,
                start_to_close_timeout=timedelta(minutes=2),
                heartbeat_timeout=HEARTBEAT_TIMEOUT,
                schedule_to_close_timeout=EMBED_GIVE_UP,
                retry_policy=EMBED_RETRIES,
            )
        return "embedded"
