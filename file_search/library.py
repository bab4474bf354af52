"""The parts of the store file search works on: vector stores (their files, the files'
attributes, when each was last active), their chunks and embeddings, and the uploaded files
themselves. Ingestion writes them (`activities/ingestion.py`); a search reads them
(`file_search/searching.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from store.chunks import Chunks
from store.files import Files
from store.vector_stores import VectorStores


@dataclass(frozen=True)
class Library:
    vector_stores: VectorStores
    chunks: Chunks
    files: Files
