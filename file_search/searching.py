"""A search of vector stores: the query embedded with each store's model, the nearest
chunks of the files its filter lets through, scored (`file_search/ranking.py`) and cut to
`max_num_results`. Shared by `POST /v1/vector_stores/{id}/search` and the `file_search` tool."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from demo.lexical_embedder import words
from file_search import ranking
from file_search.embedder import Embedder
from file_search.library import Library
from models.file_search import Filter, RankingOptions
from store.vector_store_rows import VectorStoreRow

ACTIVE_WITHIN_SECONDS = 60
"""A store active this recently is not marked active again (expiry counts in days)."""
CANDIDATES = 100
"""Nearest chunks by embedding that the hybrid score re-ranks, at least (4x what is asked, if more)."""


@dataclass(frozen=True)
class Hit:
    file_id: str
    filename: str
    score: float
    text: str
    attributes: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        """As `vector_stores.search` returns a result."""
        return {
            "file_id": self.file_id,
            "filename": self.filename,
            "score": self.score,
            "attributes": self.attributes,
            "content": [{"type": "text", "text": self.text}],
        }


async def search(
    library: Library,
    embedder: Embedder,
    stores: list[VectorStoreRow],
    queries: list[str],
    *,
    project: str,
    max_num_results: int,
    filters: Filter | None = None,
    ranking_options: RankingOptions | None = None,
) -> list[Hit]:
    ids = [store.id for store in stores]
    attributes = await library.vector_stores.attributes_of(ids)
    # Every file's attributes against every comparison: work that grows with the stores, so
    # in a thread (it yields the loop every few milliseconds) rather than on the loop.
    allowed = (
        await asyncio.to_thread(
            lambda: [file_id for file_id, attrs in attributes.items() if ranking.matches(filters, attrs)]
        )
        if filters is not None
        else list(attributes)
    )
    if not allowed:
        return []
    query_words = {word for query in queries for word in words(query)}
    weighting = ranking.weights(ranking_options)
    by_model: dict[str, list[str]] = defaultdict(list)
    for store in stores:
        by_model[store.embedding_model].append(store.id)
    best: dict[tuple[str, int], tuple[float, str]] = {}  # (file, position) -> score, text
    for model, store_ids in by_model.items():
        vectors = await embedder.embed(queries, project, model=model, lane="interactive")
        for vector in vectors:
            nearest = await library.chunks.nearest(
                store_ids, allowed if filters is not None else None, vector, max(CANDIDATES, 4 * max_num_results)
            )
            for chunk in nearest:
                scored = ranking.score(chunk.similarity, query_words, chunk.text, weighting)
                key = (chunk.file_id, chunk.position)
                if key not in best or best[key][0] < scored:
                    best[key] = (scored, chunk.text)
    threshold = ranking_options.score_threshold if ranking_options and ranking_options.score_threshold else 0.0
    ranked = sorted(
        (
            (scored, file_id, position, text)
            for (file_id, position), (scored, text) in best.items()
            if scored >= threshold
        ),
        key=lambda each: (-each[0], each[1], each[2]),
    )[:max_num_results]
    files = await library.files.some(list({file_id for _, file_id, _, _ in ranked}), project)
    stale = [store.id for store in stores if store.last_active_at < time.time() - ACTIVE_WITHIN_SECONDS]
    if stale:  # a write only when a store's last activity is worth updating, not one per search
        await library.vector_stores.touch(stale)
    return [
        Hit(
            file_id, files[file_id].filename if file_id in files else file_id, scored, text, attributes.get(file_id, {})
        )
        for scored, file_id, _, text in ranked
    ]


def shown_to_model(query: str, hits: list[Hit], first_number: int) -> str:
    """What the model is told of a `file_search` call: the chunks, numbered for `[n]` citations."""
    if not hits:
        return f"The file search for {query!r} found nothing."
    lines = [f"File search results for {query!r}. Cite a result you use with its number in brackets, like [1]."]
    for offset, hit in enumerate(hits):
        lines.append(f"[{first_number + offset}] {hit.filename}\n{hit.text}")
    return "\n\n".join(lines)
