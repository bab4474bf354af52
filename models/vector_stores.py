"""The bodies of OpenAI's Vector Stores API (`/v1/vector_stores`, its `files`,
`file_batches` and `search`); the filters and ranking options it shares with the
`file_search` tool are in `models/file_search.py`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from models.chunks import DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS, MAX_MAX_TOKENS, MIN_MAX_TOKENS
from models.file_search import MAX_RESULTS, Attributes, Body, Filters, RankingOptions
from models.requests import Metadata

MAX_FILES_AT_ONCE = 500
"""File ids one request may name (`file_ids` of a vector store or a batch), as with OpenAI."""
MAX_QUERY_CHARS = 4_000


class StaticChunking(Body):
    max_chunk_size_tokens: int = Field(ge=MIN_MAX_TOKENS, le=MAX_MAX_TOKENS)
    chunk_overlap_tokens: int = Field(ge=0)

    @model_validator(mode="after")
    def _overlap_at_most_half(self) -> StaticChunking:
        if self.chunk_overlap_tokens > self.max_chunk_size_tokens // 2:
            raise ValueError("chunk_overlap_tokens may be at most half of max_chunk_size_tokens")
        return self


class AutoChunkingStrategy(Body):
    type: Literal["auto"]


class StaticChunkingStrategy(Body):
    type: Literal["static"]
    static: StaticChunking


ChunkingStrategy = Annotated[AutoChunkingStrategy | StaticChunkingStrategy, Field(discriminator="type")]


def chunking_as_stored(strategy: AutoChunkingStrategy | StaticChunkingStrategy | None) -> dict[str, Any]:
    """What a `vector_store.file` says of its chunking: `auto` resolved, as OpenAI reports it."""
    if isinstance(strategy, StaticChunkingStrategy):
        return {"type": "static", "static": strategy.static.model_dump()}
    return {
        "type": "static",
        "static": {"max_chunk_size_tokens": DEFAULT_MAX_TOKENS, "chunk_overlap_tokens": DEFAULT_OVERLAP_TOKENS},
    }


class ExpiresAfter(Body):
    anchor: Literal["last_active_at"]
    days: int = Field(ge=1, le=365)


FileIds = Annotated[list[Annotated[str, Field(min_length=1, max_length=80)]], Field(max_length=MAX_FILES_AT_ONCE)]


class CreateVectorStore(Body):
    name: str | None = Field(default=None, max_length=256)
    description: str | None = Field(default=None, max_length=512)
    file_ids: FileIds | None = None
    chunking_strategy: ChunkingStrategy | None = None
    expires_after: ExpiresAfter | None = None
    metadata: Metadata | None = None


class UpdateVectorStore(Body):
    name: str | None = Field(default=None, max_length=256)
    expires_after: ExpiresAfter | None = None
    metadata: Metadata | None = None


class CreateVectorStoreFile(Body):
    file_id: str = Field(min_length=1, max_length=80)
    attributes: Attributes | None = None
    chunking_strategy: ChunkingStrategy | None = None


class UpdateVectorStoreFile(Body):
    attributes: Attributes | None


class BatchFile(Body):
    file_id: str = Field(min_length=1, max_length=80)
    attributes: Attributes | None = None
    chunking_strategy: ChunkingStrategy | None = None


class CreateFileBatch(Body):
    file_ids: FileIds | None = None
    files: list[BatchFile] | None = Field(default=None, max_length=MAX_FILES_AT_ONCE)
    attributes: Attributes | None = None
    chunking_strategy: ChunkingStrategy | None = None

    @model_validator(mode="after")
    def _one_list(self) -> CreateFileBatch:
        if (self.file_ids is None) == (self.files is None):
            raise ValueError("give either file_ids or files")
        return self

    def entries(self) -> list[BatchFile]:
        if self.files is not None:
            return self.files
        return [
            BatchFile(file_id=file_id, attributes=self.attributes, chunking_strategy=self.chunking_strategy)
            for file_id in self.file_ids or []
        ]


Query = Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]


class SearchVectorStore(Body):
    query: Query | Annotated[list[Query], Field(min_length=1, max_length=10)]
    filters: Filters | None = None
    max_num_results: int = Field(default=10, ge=1, le=MAX_RESULTS)
    ranking_options: RankingOptions | None = None
    rewrite_query: bool = False

    def queries(self) -> list[str]:
        return [self.query] if isinstance(self.query, str) else list(self.query)
