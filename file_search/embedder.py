"""Texts to embeddings with the configured model (`EMBEDDING_MODEL`).

`lexical` (the default) is the embedder that ships in the package (`demo/lexical_embedder.py`):
no call leaves the process. Any other name is a model of the registry, called at its
deployment's `/embeddings`; a worker's calls go through the upstream gate, so ingestion
(in the background lane) and the `file_search` tool's queries (interactive) draw on the
same budget (`rpm`, `tpm`, what 429s taught) as inference. The API's own searches
(`vector_stores.search`) embed their query with one direct call. Every failure is an
`UpstreamError` that says whether retrying can help.
"""

from __future__ import annotations

import asyncio
from typing import Any

from demo.lexical_embedder import LEXICAL_MODEL, lexical_vector, normalised
from models.errors import RejectedByUpstreamError
from upstream.clients import Upstreams
from upstream.gate import UpstreamGate
from upstream.pacing import Lane
from upstream.registry import ModelRegistry

IN_THREAD_CHARS = 8192
"""Texts longer than this together are embedded by the lexical embedder in a thread (a batch of
ingested chunks takes tens of milliseconds of CPU: not on the event loop)."""


def _vectors(answer: dict[str, Any], count: int, model: str) -> list[list[float]]:
    data = answer.get("data")
    if not isinstance(data, list) or len(data) != count:
        raise RejectedByUpstreamError(f"the embeddings of {model!r} came back without one vector per text")
    ordered = sorted(data, key=lambda each: each.get("index", 0) if isinstance(each, dict) else 0)
    vectors = []
    for each in ordered:
        vector = each.get("embedding") if isinstance(each, dict) else None
        if not isinstance(vector, list) or not vector or not all(isinstance(v, (int, float)) for v in vector):
            raise RejectedByUpstreamError(f"the embeddings of {model!r} came back without a list of numbers")
        vectors.append(normalised([float(v) for v in vector]))
    return vectors


class Embedder:
    def __init__(
        self, model: str, registry: ModelRegistry, upstreams: Upstreams, gate: UpstreamGate | None = None
    ) -> None:
        self.model = model
        self.registry = registry
        self.upstreams = upstreams
        self.gate = gate

    @property
    def lexical(self) -> bool:
        return self.model == LEXICAL_MODEL

    async def embed(
        self, texts: list[str], project: str, *, model: str | None = None, lane: Lane = "background"
    ) -> list[list[float]]:
        """One vector (unit length) per text, by `model` (the store's: by default the
        configured one); `lane`: a query a response waits for is `interactive`."""
        model = model or self.model
        if not texts:
            return []
        if model == LEXICAL_MODEL:
            if sum(map(len, texts)) < IN_THREAD_CHARS:
                return [lexical_vector(text) for text in texts]
            return await asyncio.to_thread(lambda: [lexical_vector(text) for text in texts])
        body = {"model": model, "input": texts, "encoding_format": "float"}
        if self.gate is None:
            deployments = self.registry.serving(model)
            if not deployments:
                raise RejectedByUpstreamError(f"no deployment serves the embeddings model {model!r}")
            deployment = deployments[0]
            answer = await self.upstreams.client(deployment).embeddings(
                body | {"model": deployment.upstream_name(model)}
            )
            return _vectors(answer, len(texts), model)
        async with self.gate.slot(model, lane, project) as slot:
            answer = await self.upstreams.client(slot.deployment).embeddings(
                body | {"model": slot.deployment.upstream_name(model)}
            )
            vectors = _vectors(answer, len(texts), model)
            usage = answer.get("usage")
            slot.succeeded(int(usage.get("total_tokens") or 0) if isinstance(usage, dict) else 0)
        return vectors
