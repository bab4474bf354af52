"""Store writes on behalf of the workflow; short, so they run as local activities."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.response_ends import ResponseEnds
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
from store.responses import Responses


class StoreActivities:
    def __init__(
        self,
        *,
        responses: Responses,
        approvals: Approvals,
        events: EventLog,
        ends: ResponseEnds,
    ) -> None:
        self.responses = responses
        self.approvals = approvals
        self.events = events
        self.ends = ends

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
        """Write the final response (`activities/response_ends.py`)."""
        return await self.ends.write(request)
