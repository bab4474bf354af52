"""A running worker says so in the store (`store/workers.py`) every few seconds, and takes
it back when it stops."""

from __future__ import annotations

import asyncio
import logging

from models.ids import new_id
from store.workers import BEAT_SECONDS, WorkerRegistry

log = logging.getLogger(__name__)


async def keep_present(registry: WorkerRegistry, task_queue: str, stop: asyncio.Event) -> None:
    worker_id = new_id("worker")
    try:
        while not stop.is_set():
            try:
                await registry.beat(worker_id, task_queue)
            except Exception as error:  # noqa: BLE001 - a missed beat is retried; readiness shows it
                log.warning("could not record this worker as running: %s", error)
            try:
                await asyncio.wait_for(stop.wait(), BEAT_SECONDS)
            except TimeoutError:
                pass
    finally:
        try:
            await asyncio.shield(registry.gone(worker_id))
        except Exception as error:  # noqa: BLE001 - its row ages out anyway
            log.warning("could not record this worker as stopped: %s", error)
