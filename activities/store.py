"""Store writes on behalf of the workflow; short, so they run as local activities."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.chat_format import tool_messages
from models.activity_io import (
    EmitEventsInput,
    EmitEventsResult,
    FinalizeInput,
    FinalizeResult,
    RecordStatusInput,
    RecordStatusResult,
)
from models.events import TERMINAL_TYPE_BY_STATUS, LifecycleEvent
from store.repository import ResponseRepository


class StoreActivities:
    def __init__(self, repository: ResponseRepository) -> None:
        self.repository = repository

    @activity.defn(name="record_status")
    async def record_status(self, request: RecordStatusInput) -> RecordStatusResult:
        response = await self.repository.get_response(request.response_id, include_unstored=True)
        if response is None:
            raise ApplicationError(f"response {request.response_id} is not in the store", non_retryable=True)
        if response.status == request.status:
            return RecordStatusResult(recorded=False)
        updated = response.model_copy(update={"status": request.status})
        event = LifecycleEvent(type=f"response.{request.status}", response=updated).wire() if request.emit_events else None
        await self.repository.save_response(updated, event)
        return RecordStatusResult(recorded=True)

    @activity.defn(name="emit_events")
    async def emit_events(self, request: EmitEventsInput) -> EmitEventsResult:
        """Events of steps the workflow itself ends (a call or listing that ran out of retries)."""
        return EmitEventsResult(appended=await self.repository.events.append_once(request.response_id, request.events))

    @activity.defn(name="finalize_response")
    async def finalize_response(self, request: FinalizeInput) -> FinalizeResult:
        """Write the final response; an unstored one (`store: false`) leaves nothing behind."""
        response = request.response
        event = None
        if request.emit_events:
            event = LifecycleEvent(type=TERMINAL_TYPE_BY_STATUS[response.status], response=response).wire()
        if response.store:
            await self._keep_for_the_chain(request)
            await self.repository.save_response(response, event)
            return FinalizeResult(stored=True)
        # Nothing of an unstored response is kept, but the end of its stream: the stream's
        # reader removes the event log once it has read that.
        if event is not None:
            await self.repository.events.append(response.id, [event])
        await self.repository.purge(response.id, keep_events=request.emit_events)
        return FinalizeResult(stored=False)

    async def _keep_for_the_chain(self, request: FinalizeInput) -> None:
        """Results of tools run after the last inference call join the chat context; the MCP
        listings are kept for follow-ups; the MCP secrets are needed no more. (An unstored
        response is purged whole instead.)"""
        response_id = request.response.id
        if request.tool_results:
            context = await self.repository.chat_context(response_id) or []
            await self.repository.save_chat_context(response_id, context + tool_messages(request.tool_results))
        if request.listings:
            await self.repository.save_listings(response_id, request.listings)
        if any(tool.type == "mcp" for tool in request.response.tools):
            await self.repository.forget_secrets(response_id)
