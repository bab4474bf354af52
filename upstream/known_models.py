"""The model names this process knows: the models file's, and (for a deployment that serves any
name: no models file, or a `*` entry) the backend's own `/models` list, read at start and
every `REFRESH_SECONDS`. At most `MAX_KNOWN` of them.

Whatever a process keeps a thing of its own for, per model name, it keeps for a known name
only, and for every other name together under `OTHER`: metric labels (`telemetry/metrics.py`
follows `KNOWN`), and the upstream budget of a `*` deployment (`Deployment.budget_key`). A
client that sends a thousand made-up names makes no thousand label values, no thousand
budget rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterable
from typing import Protocol

from telemetry import metrics

log = logging.getLogger(__name__)

MAX_KNOWN = 1000
OTHER = "other"
REFRESH_SECONDS = 60.0


class ModelList(Protocol):
    async def names(self) -> list[str]: ...


class KnownModels:
    def __init__(self, limit: int = MAX_KNOWN) -> None:
        self.limit = limit
        self._names: frozenset[str] = frozenset()
        self._lock = threading.Lock()

    def learn(self, names: Iterable[str]) -> None:
        """Know these names too (up to the limit: the first learned stay)."""
        with self._lock:
            room = self.limit - len(self._names)
            fresh = [name for name in dict.fromkeys(names) if name not in self._names][: max(0, room)]
            if fresh:
                self._names = self._names | frozenset(fresh)

    def knows(self, model: str) -> bool:
        return model in self._names

    def shown(self, model: str) -> str:
        """The name as per-model state keeps it: itself when known, else `OTHER`."""
        return model if model in self._names else OTHER

    async def keep_learning(self, listing: ModelList, stop: asyncio.Event) -> None:
        """Learn the backend's list now and every `REFRESH_SECONDS` until `stop` (a backend that
        does not answer is asked again next time)."""
        while not stop.is_set():
            try:
                self.learn(await listing.names())
            except Exception as error:  # noqa: BLE001 - the next round asks again
                log.info(
                    "the backend's model list could not be read (%s); asking again in %g s", error, REFRESH_SECONDS
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), REFRESH_SECONDS)


KNOWN = KnownModels()
"""This process's known names (one process, one registry)."""


def start(names: Iterable[str]) -> None:
    """This process knows `names` (the registry's), and its metrics label models by what it knows."""
    KNOWN.learn(names)
    metrics.models.follow(KNOWN.knows)
