"""Writing a response's end (`FinalizeInput`): for the workflow's `finalize_response`, and for
a turn's call that writes the end itself (`workflows/response_end.py`)."""

from __future__ import annotations

from activities.handover import Outcomes
from chat_completions.converter import tool_messages
from models.activity_io import FinalizeInput, FinalizeResult
from store.parked import ParkedFields
from store.responses import Responses
from store.safety_strikes import SafetyStrikes
from store.steers import SteerSettlement
from telemetry import metrics


class ResponseEnds:
    def __init__(
        self, *, responses: Responses, parked: ParkedFields, strikes: SafetyStrikes, outcomes: Outcomes
    ) -> None:
        self.responses = responses
        self.parked = parked
        self.strikes = strikes
        self.outcomes = outcomes

    async def write(self, request: FinalizeInput) -> FinalizeResult:
        """Write the final response, its stubs whole again, then hand it to a request in this
        process that waits for it. Written again (a retried step), it changes nothing."""
        response = request.response
        tool_results = await self.parked.tool_texts(response.id, request.tool_results)
        steering = (
            None if request.successor_id is None else SteerSettlement(request.successor_id, request.required_input)
        )
        # A strike is kept before the end is written: whoever sees this block (here, through the
        # store, in another process) finds its identifier counted when it asks again.
        identifier_blocked = await self._struck(request)
        ended = await self.responses.finish(
            response,
            with_event=request.emit_events,
            parked=request.parked,
            tool_messages=tool_messages(tool_results),
            listings=request.listings,
            steering=steering,
        )
        if ended is not None:
            self.outcomes.publish(ended)
            metrics.response_ended(ended.model, ended.status)
        return FinalizeResult(
            stored=response.store,
            successor_id=steering.made if steering else None,
            identifier_blocked=identifier_blocked,
        )

    async def _struck(self, request: FinalizeInput) -> bool:
        """A response a moderation check blocked is a strike against its `safety_identifier`;
        whether this strike is the one that blocks the identifier."""
        response, limit = request.response, request.safety
        if not (
            limit is not None
            and limit.blocks
            and response.safety_identifier
            and response.moderation is not None
            and response.incomplete_details is not None
            and response.incomplete_details.reason == "content_filter"
        ):
            return False
        place = await self.strikes.record(
            request.project, response.safety_identifier, response.id, limit.window_seconds
        )
        return place == limit.blocks  # the same answer when a retried finalize asks again
