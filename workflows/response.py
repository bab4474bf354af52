"""`ResponseWorkflow`: one per response, workflow id = response id.

The loop: infer, decide the next step (pure), act on it, until the machine reaches a
terminal state; then the final response is written by a store activity and returned.
Activities are addressed by name so this module imports no I/O code.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from models.activity_io import (
        FinalizeInput,
        FinalizeResult,
        InferenceInput,
        InferenceResult,
        RecordStatusInput,
        RecordStatusResult,
    )
    from models.errors import CancelRequestedError
    from models.responses import IncompleteDetails, Response, ResponseErrorInfo, Usage
    from models.workflow_io import ResponseWorkflowInput
    from workflows.machine import IllegalTransition, ResponseMachine
    from workflows.options import local_activity_options
    from workflows.turn import next_step


@workflow.defn(name="ResponseWorkflow")
class ResponseWorkflow:
    def __init__(self) -> None:
        self.machine = ResponseMachine()
        self.response: Response | None = None

    @workflow.run
    async def run(self, request: ResponseWorkflowInput) -> Response:
        self.response = request.response
        self.settings = request.settings
        self.emit_events = request.emit_events
        try:
            await self._respond()
        except (ActivityError, ApplicationError) as error:
            # An activity cancelled with the workflow, or one that saw the client's cancel in
            # the store first, ends the response cancelled.
            failure = _application_failure(error)
            if is_cancelled_exception(error) or (failure and failure.type == CancelRequestedError.__name__):
                self.machine.fire("cancel")
            else:
                self._fail(failure.message if failure else str(error.cause or error))
        except IllegalTransition as error:
            self._fail(f"internal state error: {error}")
        except asyncio.CancelledError:
            self.machine.fire("cancel")
        return await self._finalize()

    @workflow.query(name="state")
    def state(self) -> str:
        return self.machine.state.value

    @workflow.query(name="response")
    def current_response(self) -> Response | None:
        return self._snapshot()

    async def _respond(self) -> None:
        assert self.response is not None
        if self.response.background:
            await self._record_status("in_progress")
        self.machine.fire("start")
        result = await workflow.execute_local_activity(
            "run_inference",
            InferenceInput(
                response=self.response, emit_events=self.emit_events, output_offset=len(self.response.output)
            ),
            result_type=InferenceResult,
            **local_activity_options(self.settings.inference),
        )
        self.response.output.extend(result.output)
        self.response.usage = (self.response.usage or Usage()) + result.usage
        step = next_step(result)
        match step.type:
            case "finish":
                self.machine.fire(step.trigger)
                if step.incomplete_reason is not None:
                    self.response.incomplete_details = IncompleteDetails(reason=step.incomplete_reason)

    def _fail(self, message: str) -> None:
        assert self.response is not None
        self.machine.fire("fail")
        self.response.error = ResponseErrorInfo(code="server_error", message=message)

    def _snapshot(self) -> Response | None:
        if self.response is None:
            return None
        return self.response.model_copy(update={"status": self.machine.response_status})

    async def _record_status(self, status: str) -> None:
        assert self.response is not None
        await workflow.execute_local_activity(
            "record_status",
            RecordStatusInput(response_id=self.response.id, status=status, emit_events=self.emit_events),
            result_type=RecordStatusResult,
            **local_activity_options(self.settings.store),
        )

    async def _finalize(self) -> Response:
        final = self._snapshot()
        assert final is not None
        final.completed_at = int(workflow.now().timestamp()) if final.status == "completed" else None
        writing = asyncio.ensure_future(
            workflow.execute_local_activity(
                "finalize_response",
                FinalizeInput(response=final, emit_events=self.emit_events),
                result_type=FinalizeResult,
                **local_activity_options(self.settings.store),
            )
        )
        while True:
            try:
                await asyncio.shield(writing)
                return final
            except asyncio.CancelledError:
                # A cancel that arrives now is too late to change the end: write it anyway.
                continue


def _application_failure(error: ActivityError | ApplicationError) -> ApplicationError | None:
    """The activity's own failure: a local activity's arrives as its ApplicationError, a
    regular one's as the cause of an ActivityError."""
    cause = error.cause if isinstance(error, ActivityError) else error
    return cause if isinstance(cause, ApplicationError) else None
