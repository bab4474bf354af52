"""Store writes on behalf of the workflow; short, so they run as local activities."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.handover import Outcomes
from chat_completions.converter import tool_messages
from models import activity_names
from models.activity_io import (
    EmitEventsInput,
    EmitEventsResult,
    FinalizeInput,
    FinalizeResult,
    RecordApprovalWaitInput,
    RecordApprovalWaitResult,
    RecordStatusInput,
    RecordStatusResult,
)
from store.approvals import Approvals
from store.event_log import EventLog
from store.parked import ParkedFields
from store.responses import Responses
from store.safety_strikes import SafetyStrikes
from store.steers import SteerSettlement
from telemetry import metrics


class StoreActivities:
    def __init__(
        self,
        *,
        responses: Responses,
        approvals: Approvals,
        events: EventLog,
        parked: ParkedFields,
        strikes: SafetyStrikes,
        outcomes: Outcomes,
    ) -> None:
        self.responses = responses
        self.approvals = approvals
        self.events = events
        self.parked = parked
        self.strikes = strikes
        self.outcomes = outcomes

    @activity.defn(name=activity_names.RECORD_STATUS)
    async def record_status(self, request: RecordStatusInput) -> RecordStatusResult:
        try:
            recorded = await self.responses.advance_status(
                request.response_id, request.status, with_event=request.emit_events
            )
        except LookupError:
            raise ApplicationError(f"response {request.response_id} is not in the store", non_retryable=True) from None
        return RecordStatusResult(recorded=recorded)

    @activity.defn(name=activity_names.RECORD_APPROVAL_WAIT)
    async def record_approval_wait(self, request: RecordApprovalWaitInput) -> RecordApprovalWaitResult:
        """The response begins to wait for these approval requests (what operators watch)."""
        recorded = await self.approvals.record_waits(request.response_id, request.approval_request_ids)
        return RecordApprovalWaitResult(recorded=recorded)

    @activity.defn(name=activity_names.EMIT_EVENTS)
    async def emit_events(self, request: EmitEventsInput) -> EmitEventsResult:
        """Events of steps the workflow itself ends (a call or listing that ran out of retries)."""
        return EmitEventsResult(appended=await self.events.append_once(request.response_id, request.events))

    @activity.defn(name=activity_names.FINALIZE_RESPONSE)
    async def finalize_response(self, request: FinalizeInput) -> FinalizeResult:
        """Write the final response, its stubs whole again, then hand it to a request in this
        process that waits for it."""
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
