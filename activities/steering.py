"""Start the successor a steered response's end made (`store/steers.py` settles the steers
in the transaction that writes the end). Idempotent, as an activity must be: a start that
runs again finds the workflow it started; one that never runs leaves the successor to the
orphan sweep."""

from __future__ import annotations

import logging
from typing import Protocol

from temporalio import activity
from temporalio.exceptions import WorkflowAlreadyStartedError

from models import activity_names
from models.mcp import McpListing
from models.responses import Response
from models.steering import StartSuccessorInput, StartSuccessorResult
from store.responses import Responses
from store.starts import Starts

log = logging.getLogger(__name__)


class StartsResponses(Protocol):
    """What starts a response's workflow (`response_service/runner.py`'s `ResponseRunner`, one floor up)."""

    async def start(
        self, response: Response, *, emit_events: bool, if_never_started: bool, listings: list[McpListing], project: str
    ) -> object: ...


class SteeringActivities:
    def __init__(self, *, responses: Responses, starts: Starts, runner: StartsResponses) -> None:
        self.responses = responses
        self.starts = starts
        self.runner = runner
        """Starts successors (on the task queue responses run on; never eagerly)."""

    @activity.defn(name=activity_names.START_SUCCESSOR)
    async def start_successor(self, request: StartSuccessorInput) -> StartSuccessorResult:
        successor = await self.responses.get(request.successor_id, include_unstored=True)
        if successor is None or successor.is_terminal:
            return StartSuccessorResult(started=False)
        has_mcp = any(tool.type == "mcp" for tool in successor.tools)
        previous = successor.previous_response_id
        listings = await self.responses.listings(previous) if has_mcp and previous else []
        try:
            await self.runner.start(
                successor, emit_events=True, if_never_started=True, listings=listings, project=request.project
            )
        except WorkflowAlreadyStartedError:
            return StartSuccessorResult(started=False)
        await self.starts.confirm_started([successor.id])
        return StartSuccessorResult(started=True)
