"""Steering's store steps, on behalf of a response's workflow (`workflows/steering.py`):
decide its steers when it stops, and start the successor made from them.

Both are idempotent, as activities must be: the successor's id is the workflow's, so a step
that runs again finds the successor it made (kept in one transaction with its steers'
commit) or the workflow it started.
"""

from __future__ import annotations

import logging
import time

from temporalio import activity
from temporalio.exceptions import WorkflowAlreadyStartedError

from api.runner import ResponseRunner
from models import activity_names
from models.events import opening_events
from models.steering import (
    ResolveSteersInput,
    ResolveSteersResult,
    StartSuccessorInput,
    StartSuccessorResult,
    successor_of,
)
from store.repository import ResponseRepository

log = logging.getLogger(__name__)


class SteeringActivities:
    def __init__(self, repository: ResponseRepository, runner: ResponseRunner) -> None:
        self.repository = repository
        self.runner = runner
        """Starts successors (on the task queue responses run on; never eagerly)."""

    @activity.defn(name=activity_names.RESOLVE_STEERS)
    async def resolve_steers(self, request: ResolveSteersInput) -> ResolveSteersResult:
        """Keep the steers `pending` while the client owes input, else make their successor."""
        repository = self.repository
        steers = [
            steer
            for steer in await repository.steers.some(request.steer_ids)
            if steer.response_id == request.response_id
        ]
        queued = [steer.id for steer in steers if steer.status == "queued"]
        if request.required_input:
            await repository.steers.mark(queued, "pending", required_input=request.required_input)
            return ResolveSteersResult()
        if await repository.get_response(request.successor_id, include_unstored=True) is not None:
            return ResolveSteersResult(successor_id=request.successor_id)  # made by an earlier attempt
        parent = await repository.get_response(request.response_id, include_unstored=True)
        if not queued or parent is None:
            return ResolveSteersResult()
        successor = successor_of(parent, request.successor_id, int(time.time()))
        await repository.create_response(
            successor,
            [item for steer in steers if steer.id in queued for item in steer.items],
            opening_events(successor),
            project=request.project,
            commits=queued,
            secrets_of=parent.id,
        )
        log.info("response %s was steered; %s goes on from it", parent.id, successor.id)
        return ResolveSteersResult(successor_id=successor.id)

    @activity.defn(name=activity_names.START_SUCCESSOR)
    async def start_successor(self, request: StartSuccessorInput) -> StartSuccessorResult:
        repository = self.repository
        successor = await repository.get_response(request.successor_id, include_unstored=True)
        if successor is None or successor.is_terminal:
            return StartSuccessorResult(started=False)
        has_mcp = any(tool.type == "mcp" for tool in successor.tools)
        previous = successor.previous_response_id
        listings = await repository.listings(previous) if has_mcp and previous else []
        try:
            await self.runner.start(
                successor, emit_events=True, if_never_started=True, listings=listings, project=request.project
            )
        except WorkflowAlreadyStartedError:
            return StartSuccessorResult(started=False)
        await repository.starts.confirm_started([successor.id])
        return StartSuccessorResult(started=True)
