"""Vector stores' housekeeping, on every worker:

- a file still `in_progress` a while after it was added has its ingestion started (again):
  an API process that died between writing the file's row and starting its workflow leaves
  one that nothing would end. A workflow still running under that id is left alone (the
  start finds it), so a sweep never ingests a file twice at once;
- a store idle for longer than its `expires_after` is deleted, and its running ingestions
  stopped (OpenAI would mark it `expired`; here it goes, as its files' chunks do).
"""

from __future__ import annotations

import logging
import time

from api.ingestions import Ingestions
from store.vector_stores import VectorStores

log = logging.getLogger(__name__)

GRACE_SECONDS = 60
"""How long after a file is added its ingestion may take to be started before a sweep does."""


class VectorStoreChores:
    def __init__(
        self, vector_stores: VectorStores, ingestions: Ingestions, *, grace_seconds: float = GRACE_SECONDS
    ) -> None:
        self.vector_stores = vector_stores
        self.ingestions = ingestions
        self.grace_seconds = grace_seconds

    async def restart_unfinished(self) -> int:
        """Start (or find running) the ingestion of every file in progress past the grace."""
        unfinished = await self.vector_stores.unfinished(int(time.time() - self.grace_seconds))
        for store, file_id in unfinished:
            await self.ingestions.start(store.id, store.project, store.embedding_model, [file_id])
        return len(unfinished)

    async def expire(self) -> int:
        expired = await self.vector_stores.expired(int(time.time()))
        for vector_store_id in expired:
            running = await self.vector_stores.delete(vector_store_id)
            await self.ingestions.cancel(vector_store_id, running)
            log.info("vector store %s expired (idle past its expires_after) and was deleted", vector_store_id)
        return len(expired)
