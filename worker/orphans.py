"""Recovery of responses the API stored but never started.

The API writes a response, then starts its workflow. An API process that dies between the
two leaves a response that no workflow will ever end. Every worker sweeps for them: a
response still queued or in progress, created more than `grace_seconds` ago (a normal
start takes milliseconds) and within `window_seconds`, is started now. A workflow that
runs or has run under its id is left alone (Temporal rejects the duplicate), so a sweep
never runs a response twice, and several workers may sweep at once.
"""

from __future__ import annotations

import asyncio
import logging
import time

from temporalio.exceptions import WorkflowAlreadyStartedError

from api.runner import ResponseRunner
from store.repository import ResponseRepository

log = logging.getLogger(__name__)


class OrphanSweeper:
    def __init__(
        self,
        repository: ResponseRepository,
        runner: ResponseRunner,
        *,
        grace_seconds: float = 30.0,
        window_seconds: float = 24 * 3600.0,
        interval_seconds: float = 60.0,
    ) -> None:
        self.repository = repository
        self.runner = runner
        self.grace_seconds = grace_seconds
        self.window_seconds = window_seconds
        self.interval_seconds = interval_seconds

    async def sweep(self) -> list[str]:
        """Start every orphan found now; returns their ids."""
        now = time.time()
        started = []
        candidates = await self.repository.running_created_between(now - self.window_seconds, now - self.grace_seconds)
        for response in candidates:
            emit_events = await self.repository.events.has_events(response.id)
            try:
                await self.runner.start(response, emit_events=emit_events, if_never_started=True)
            except WorkflowAlreadyStartedError:
                continue
            log.warning("started the workflow of response %s, which its API server never started", response.id)
            started.append(response.id)
        return started

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.sweep()
            except Exception as error:  # noqa: BLE001 - the next sweep tries again
                log.warning("orphan sweep failed: %s", error)
            try:
                await asyncio.wait_for(stop.wait(), self.interval_seconds)
            except TimeoutError:
                pass
