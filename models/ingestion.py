"""What the ingestion workflow (`workflows/ingestion.py`) and its activities take and give:
ids and counts only, never a file's text (it stays in the store)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

INGESTION_WORKFLOW = "FileIngestion"
EMBED_BATCH = 64
"""Chunks embedded in one step (one embeddings call)."""
BATCHES_PER_RUN = 200
"""Steps one run of the workflow takes before it continues as new (about 1,200 history events;
a file of `IngestionLimits.max_chunks` takes two runs)."""


def ingestion_workflow_id(vector_store_id: str, file_id: str) -> str:
    return f"ingest-{vector_store_id}-{file_id}"


class FileIngestionInput(BaseModel):
    vector_store_id: str
    file_id: str
    project: str
    embedding_model: str
    chunked: bool = False
    """The file's chunks are kept already (a run that continued as new)..."""
    embedded_through: int = -1
    """...and those up to this position are embedded."""
    batches_per_run: int = BATCHES_PER_RUN
    """Steps a run takes before it continues as new."""


class ChunkFileInput(BaseModel):
    vector_store_id: str
    file_id: str


class ChunkFileResult(BaseModel):
    chunks: int
    gone: bool = False
    """The file left the store, or its ingestion was cancelled: nothing more to do."""


class EmbedChunksInput(BaseModel):
    vector_store_id: str
    file_id: str
    project: str
    embedding_model: str
    start: int
    end: int


class EmbedChunksResult(BaseModel):
    embedded: int


class EmbedNextChunksInput(BaseModel):
    vector_store_id: str
    file_id: str
    project: str
    embedding_model: str
    after: int
    """Embed the first chunks past this position that have no embedding yet."""
    limit: int = EMBED_BATCH


class EmbedNextChunksResult(BaseModel):
    embedded: int
    last_position: int
    """The last position looked at: where the next step starts."""
    more: bool
    """Chunks past `last_position` may still need embeddings."""


class SettleFileInput(BaseModel):
    vector_store_id: str
    file_id: str
    status: Literal["completed", "failed"]
    error_code: Literal["server_error", "unsupported_file", "invalid_file"] | None = None
    error_message: str | None = None


class SettleFileResult(BaseModel):
    settled: bool
