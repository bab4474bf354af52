"""Store writes on behalf of the workflow; short, so they run as local activities."""

from __future__ import annotations

from temporalio import activity
from temporalio.exceptions import ApplicationError

from models.activity_io import FinalizeInput, FinalizeResult, RecordStatusInput, RecordStatusResult
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
        await self.repository.save_response(response.model_copy(update={"status": request.status}))
        return RecordStatusResult(recorded=True)

    @activity.defn(name="finalize_response")
    async def finalize_response(self, request: FinalizeInput) -> FinalizeResult:
        """Write the final response; an unstored one (`store: false`) leaves nothing behind."""
        if request.response.store:
            await self.repository.save_response(request.response)
            return FinalizeResult(stored=True)
        await self.repository.purge(request.response.id)
        return FinalizeResult(stored=False)
