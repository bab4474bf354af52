"""What the ingestion workflow (`workflows/ingestion.py`) and its activities take and give:
ids and counts only, never a file's text (it stays in the store)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

INGESTION_WORKFLOW = "FileIngestion"
EMBED_BATCH = 64
"""Chunks embedded in one step (one embeddings call)."""


def ingestion_workflow_id(vector_store_id: str, file_id: str) -> str:
    return f"ingest-{vector_store_id}-{file_id}"


class FileIngestionInput(BaseModel):
    vector_store_id: str
    file_id: str
    project: str
    embedding_model: str


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


class SettleFileInput(BaseModel):
    vector_store_id: str
    file_id: str
    status: Literal["completed", "failed"]
    error_code: Literal["server_error", "unsupported_file", "invalid_file"] | None = None
    error_message: str | None = None


class SettleFileResult(BaseModel):
    settled: bool
