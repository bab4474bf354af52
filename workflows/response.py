"""`ResponseWorkflow`: one per response, workflow id = response id.

The loop: list the MCP servers' tools (those the chain has not listed), run the calls a
previous response's approvals allow, then turn after turn infer, and act on the typed next
step (pure, `workflows/turn.py`) until the machine reaches a terminal state; then the final
response is written by a store activity, and the result says which response ended and how.
The tool steps are `workflows/tool_steps.py`'s. A history grown long continues as new
between two turns, carrying where the loop was (`CarriedLoop`). Activities are addressed by
name so this module imports no I/O code.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception
from temporalio.exceptions import CancelledError as TemporalCancelledError

with workflow.unsafe.imports_passed_through():
    from chat_completions.tool_table import mcp_functions
    from models import activity_names
    from models.activity_io import (
        EmitEventsInput,
        EmitEventsResult,
        EndWritten,
        FinalizeResult,
        RecordStatusInput,
        RecordStatusResult,
    )
    from models.errors import ResponseFailedError
    from models.events import StreamEvent
    from models.history_budget import MAX_HISTORY_BYTES, MAX_WORKFLOW_INPUT_BYTES, size_of
    from models.mcp import ApprovalDecision
    from models.responses import IncompleteDetails, Response, ResponseErrorInfo, Usage
    from models.steering import SteerSignal
    from models.visibility import RESPONSE_MODEL, RESPONSE_STATE, current_details, search_attributes_on, shown
    from models.webhooks import ended_event, identifier_blocked_event
    from models.workflow_io import (
        ApprovalUpdate,
        ApprovalUpdateResult,
        CarriedLoop,
        ResponseEnded,
        ResponseWorkflowInput,
    )
    from workflows import moderation, patches, steering
    from workflows.failures import application_failure, error_code, is_cancel_request
    from workflows.machine import IllegalTransition, State
    from workflows.model_call import call_model
    from workflows.options import local_activity_options
    from workflows.response_end import end_input, ended, may_end_in_the_call
    from workflows.response_state import ResponseState
    from workflows.tool_steps import ToolSteps
    from workflows.turn import TurnPosition, next_step
    from workflows.turn_input import turn_input
    from workflows.webhooks import send_webhooks


CANCEL_ARRIVAL_SECONDS = 2.0
"""How long a response cancelled through the store waits for Temporal's cancel request."""

MAX_TURNS = 64
"""Inference calls one response may make (each after the tool calls of the one before)."""


@workflow.defn(name="ResponseWorkflow")
class ResponseWorkflow(ToolSteps):
    @workflow.init
    def __init__(self, request: ResponseWorkflowInput) -> None:
        self.state = ResponseState.of(request)
        self.end_written: EndWritten | None = None
        """The response's end as its last turn's call wrote it (`workflows/response_end.py`)."""

    @workflow.run
    async def run(self, request: ResponseWorkflowInput) -> ResponseEnded | Response:
        if patches.taken(patches.STATE_SHOWN_IN_TEMPORAL):
            self.state.machine.on_change = self._show_state
            self._say(current_details(self.state.machine.state.value))
        try:
            await self._respond(request)
        except (ActivityError, ApplicationError) as error:
            # An activity cancelled with the workflow, or one that saw the client's cancel in
            # the store first, ends the response cancelled.
            if is_cancelled_exception(error):
                self.state.machine.fire("cancel")
            elif is_cancel_request(error):
                self.state.machine.fire("cancel")
                await self._let_temporal_cancel_arrive()
            else:
                failure = application_failure(error)
                self._fail(failure.message if failure else str(error.cause or error), error_code(failure))
        except ResponseFailedError as error:
            self._fail(error.message, error.code)
        except IllegalTransition as error:
            self._fail(f"internal state error: {error}")
        except asyncio.CancelledError:
            self.state.machine.fire("cancel")
        final, written = await self._finalize()
        if written.successor_id is not None:
            await steering.start_successor(self.state, written.successor_id)
        if written.identifier_blocked and final.safety_identifier:
            identifier = final.safety_identifier
            await send_webhooks(
                self.state.settings.webhooks,
                self.state.settings.webhook_task_queue,
                final,
                lambda event_id, now: [identifier_blocked_event(event_id, final.id, identifier, now)],
                self.state.settings.store,
                any_response=True,
            )
        await send_webhooks(
            self.state.settings.webhooks,
            self.state.settings.webhook_task_queue,
            final,
            lambda event_id, now: [ended_event(event_id, final.id, final.status, now)],
            self.state.settings.store,
        )
        if patches.taken(patches.ENDS_AS_THE_RESPONSE_ENDS):
            # Once the store has the end: Temporal's own status says it too (its Failures filter,
            # its Canceled), so the UI does not show every response as Completed.
            if final.status == "failed":
                raise ApplicationError(
                    final.error.message if final.error else "the response failed",
                    type="ResponseFailed",
                    non_retryable=True,
                )
            if final.status == "cancelled":
                raise TemporalCancelledError("the response was cancelled")
        if patches.taken(patches.RESULT_IS_ID_AND_STATUS):
            return ResponseEnded(id=final.id, status=final.status)
        return final

    async def _let_temporal_cancel_arrive(self) -> None:
        """The client's cancel reached the model call through the store, before Temporal's
        cancel request (sent at the same time) reached this workflow. Ending at once would end
        in the workflow task that the request arrives during: Temporal refuses that end
        (UnhandledCommand, a failed task, red in the UI) and runs the task again. Wait for the
        request instead, a moment at most."""
        if not patches.taken(patches.CANCEL_ENDS_AFTER_TEMPORAL_CANCEL):
            return
        task = asyncio.current_task()
        if task is not None and task.cancelling() and patches.taken(patches.TEMPORAL_CANCEL_SEEN_FIRST):
            return  # it came first (a call waited for to stop after it): nothing to wait for
        try:
            await workflow.wait_condition(lambda: False, timeout=timedelta(seconds=CANCEL_ARRIVAL_SECONDS))
        except (TimeoutError, asyncio.CancelledError):
            pass

    @workflow.query(name="state")
    def state_name(self) -> str:
        return self.state.machine.state.value

    @workflow.query(name="response")
    def current_response(self) -> Response:
        return self._snapshot()

    @workflow.update(name="decide_approval")
    async def decide_approval(self, update: ApprovalUpdate) -> ApprovalUpdateResult:
        request_id = update.approval_request_id
        if patches.taken(patches.APPROVAL_WAITS_FOR_THE_WAIT):
            # A decision can reach a worker whose replay (after a crash) has not come back to
            # the wait yet: it waits for the wait. The API sends only ids the response has
            # shown as asked, so the wait is short; a response that ends first refuses it.
            await workflow.wait_condition(lambda: request_id in self.state.awaited or self.state.machine.is_terminal)
            if request_id not in self.state.awaited:
                raise ApplicationError(
                    f"the response is {self.state.machine.response_status} and waits for no approval",
                    type="NotAwaitingApproval",
                )
            if request_id in self.state.decisions:
                raise ApplicationError(
                    f"approval request '{request_id}' has already been answered", type="ApprovalAlreadyAnswered"
                )
        request = self.state.awaited[request_id]
        self.state.decisions[request.id] = ApprovalDecision(
            request=request, approve=update.approve, reason=update.reason, decided_by=update.decided_by
        )
        return ApprovalUpdateResult()

    @decide_approval.validator
    def _validate_decision(self, update: ApprovalUpdate) -> None:
        """Runs before the update touches history: a refused decision leaves no trace. Only
        what cannot change is refused here (an answered request, an ended response, an id
        the wait does not know); anything else waits in the handler."""
        request_id = update.approval_request_id
        if request_id in self.state.decisions or request_id in self.state.answered:
            raise ApplicationError(
                f"approval request '{request_id}' has already been answered", type="ApprovalAlreadyAnswered"
            )
        if self.state.machine.is_terminal:
            raise ApplicationError(
                f"the response is {self.state.machine.response_status} and waits for no approval",
                type="NotAwaitingApproval",
            )
        if self.state.machine.state == State.AWAITING_APPROVAL and request_id not in self.state.awaited:
            raise ApplicationError(
                f"the response has no approval request '{request_id}'", type="UnknownApprovalRequest"
            )

    @workflow.signal(name="steer")
    def steer(self, signal: SteerSignal) -> None:
        steering.take_steer(self.state, signal)

    def _show_state(self, state: State) -> None:
        """The state as the workflow's current details and, when the namespace has them and
        the response is more than a request answered, in its search attributes (each upsert
        is a history event and a visibility write: `visibility.search_attributes_on`)."""
        if self.state.settings.search_attributes:
            present = workflow.info().typed_search_attributes
            updates = search_attributes_on(
                state.value,
                kept=present.get(RESPONSE_STATE),
                described=present.get(RESPONSE_MODEL) is not None,
                model=self.state.response.model,
                previous_response_id=self.state.response.previous_response_id,
            )
            if updates:
                workflow.upsert_search_attributes(updates)
        waiting = len([request for request in self.state.awaited if request not in self.state.decisions])
        self._say(current_details(state.value, waiting))

    def _say(self, now: str) -> None:
        """The workflow's current details: what it does now, and what the response is."""
        workflow.set_current_details(shown(now, self.state.about))

    # ---- the loop ----------------------------------------------------------------------

    async def _respond(self, request: ResponseWorkflowInput) -> None:
        response = self.state.response
        loop = request.carried
        if loop is not None:  # a run continued as new: the loop goes on where it was
            self._resume(request, loop)
        else:
            if response.background:
                await self._record_status("in_progress")
            if self.state.servers and not response.compact_only:
                self.state.machine.fire("list_tools")
                await self._list_tools(request.listings)
                if self.state.tools_blocked:  # a listing a check withheld
                    self.state.machine.fire("block")
                    return
            if request.approvals:
                self.state.machine.fire("execute_approved")
                await self._run_calls(self._apply(request.approvals))
                if self.state.tools_blocked:
                    self.state.machine.fire("block")
                    return
                self.state.machine.fire("tools_done")
            else:
                self.state.machine.fire("start")
            loop = CarriedLoop(turn=0, recorded=False, compact=response.compact_only)
        functions = mcp_functions(
            response.tools,
            {listing.item.server_label: listing.item for listing in self.state.listings},
            parked=self.state.parked,
        )
        turn, recorded, compact, just_compacted = loop.turn, loop.recorded, loop.compact, loop.just_compacted
        while True:
            if turn >= MAX_TURNS:
                # History must stay bounded: a model that never stops calling tools is stopped.
                raise ResponseFailedError(f"the model called tools for {MAX_TURNS} turns without answering; stopped")
            if (
                turn > loop.turn
                and (
                    carried := self._next_run(
                        request,
                        loop,
                        CarriedLoop(turn=turn, recorded=recorded, compact=compact, just_compacted=just_compacted),
                    )
                )
                is not None
            ):
                workflow.continue_as_new(carried)
            if workflow.info().get_current_history_size() > MAX_HISTORY_BYTES:
                # Every step is bounded, but thousands of them (many parallel calls, turn after
                # turn) could still reach Temporal's 50 MB, which ends a workflow without a word.
                raise ResponseFailedError(
                    "the response took too many steps to keep (its workflow history "
                    f"passed {MAX_HISTORY_BYTES // (1024 * 1024)} MiB); stopped"
                )
            turn_start = len(response.output)
            if not compact and not await moderation.input_passes(self.state, request.project, first=turn == 0):
                self.state.machine.fire("block")
                return
            position = TurnPosition(turn, turn_start, compact, from_start=not recorded, just_compacted=just_compacted)
            result, detailed = await call_model(
                turn_input(
                    self.state,
                    functions,
                    position,
                    lease_seconds=self._lease_seconds(),
                    # The patch is asked only where it changes something: other runs hold no trace.
                    may_end=may_end_in_the_call(self.state, position) and patches.taken(patches.ENDS_IN_THE_CALL),
                ),
                self.state.settings.inference,
                queue_seconds=self.state.settings.inference_queue_seconds,
                fallbacks=request.fallbacks,
                about=self.state.about,
            )
            if detailed:  # the details told of retries or waits; they are over
                self._say(current_details(self.state.machine.state.value))
            turn += 1
            self.end_written = result.ended
            if result.compaction_due:  # nothing was asked: compact the context, then ask
                compact = True
                continue
            self.state.tool_results = {}
            response.output.extend(result.output)
            self.state.parked.update({item_id: item_id for item_id in result.parked})
            response.usage = (response.usage or Usage()) + result.usage
            recorded = True
            if moderation.output_checked(response, result.moderation, result.blocked):
                self.state.machine.fire("block")
                return
            if response.compact_only:
                self.state.machine.fire("complete")
                return
            if compact:  # the compaction item is out; the turn now runs from it
                compact, just_compacted = False, True
                continue
            just_compacted = False
            while True:
                step = next_step(
                    response.output,
                    turn_start,
                    result.finish_reason,
                    self.state.decisions,
                    can_wait=response.background,
                    steered=bool(self.state.steers),
                )
                match step.type:
                    case "finish":
                        self.state.machine.fire(step.trigger)
                        if step.incomplete_reason is not None:
                            response.incomplete_details = IncompleteDetails(reason=step.incomplete_reason)
                        return
                    case "run_tools":
                        self.state.machine.fire("run_tools")
                        await self._run_calls(list(step.indexes))
                        if self.state.tools_blocked:  # a tool's output a check withheld
                            self.state.machine.fire("block")
                            return
                    case "await_approval":
                        if not await self._await_approval(step.requests):
                            self.state.machine.fire("complete")  # the requests stay open for a follow-up
                            return
                        self.state.machine.fire("approval_decided")
                        self._apply([self.state.decisions[request.id] for request in step.requests])
                    case "infer":
                        self.state.machine.fire("tools_done")
                        break

    # ---- continuing as new -------------------------------------------------------------

    def _next_run(
        self, request: ResponseWorkflowInput, was: CarriedLoop, now: CarriedLoop
    ) -> ResponseWorkflowInput | None:
        """The next run's input, when this one should continue as new: between two turns, once
        the history is long (Temporal suggests it, or it passed `continue_as_new_bytes`) and
        no update is being handled. It carries the response so far (its large items as stubs,
        their fields parked in the store), its listings, and where its loop is; one too large
        to be a workflow's input goes on here instead, to the history's cap. A response that
        started before this (no patch marker) goes on as it did."""
        info = workflow.info()
        if not (
            info.is_continue_as_new_suggested()
            or info.get_current_history_size() > self.state.settings.continue_as_new_bytes
        ):
            return None
        if not (workflow.all_handlers_finished() and patches.taken(patches.CONTINUES_AS_NEW)):
            return None
        carried = request.model_copy(
            update={
                "response": self.state.response,
                "listings": self.state.listings,
                "approvals": [],
                "parked": [],
                "carried": now.model_copy(
                    update={
                        "tool_results": self.state.tool_results,
                        "sources": self.state.sources,
                        "parked": self.state.parked,
                        "answered": sorted({*self.state.answered, *self.state.decisions}),
                        "runs": was.runs + 1,
                        "steers": self.state.steers,
                    }
                ),
            }
        )
        if size_of(carried) > MAX_WORKFLOW_INPUT_BYTES:
            workflow.logger.warning(
                "response %s goes on in this run: what it would carry is too large", request.response.id
            )
            return None
        return carried

    def _resume(self, request: ResponseWorkflowInput, loop: CarriedLoop) -> None:
        self.state.listings = list(request.listings)
        self.state.tool_results = dict(loop.tool_results)
        self.state.sources = list(loop.sources)
        self.state.parked.update(loop.parked)
        self.state.answered = set(loop.answered)
        self.state.steers = [*loop.steers, *(steer for steer in self.state.steers if steer not in loop.steers)]
        self.state.machine.fire("start")

    # ---- the response ------------------------------------------------------------------

    @staticmethod
    def _lease_seconds() -> float:
        """The workflow task timeout: the turn's claim lapses about when a dead worker's task
        moves to another worker, and a live holder renews it four times within that."""
        timeout = workflow.info().task_timeout
        return timeout.total_seconds() if timeout else 10.0

    def _fail(self, message: str, code: str = "server_error") -> None:
        self.state.machine.fire("fail")
        self.state.response.error = ResponseErrorInfo(code=code, message=message)

    def _snapshot(self) -> Response:
        return self.state.response.model_copy(update={"status": self.state.machine.response_status})

    async def _emit(self, events: list[StreamEvent]) -> None:
        if not self.state.emit_events:
            return
        await workflow.execute_local_activity(
            activity_names.EMIT_EVENTS,
            EmitEventsInput(response_id=self.state.response.id, events=[event.wire() for event in events]),
            result_type=EmitEventsResult,
            **local_activity_options(self.state.settings.store),
        )

    async def _record_status(self, status: str) -> None:
        await workflow.execute_local_activity(
            activity_names.RECORD_STATUS,
            RecordStatusInput(response_id=self.state.response.id, status=status, emit_events=self.state.emit_events),
            result_type=RecordStatusResult,
            **local_activity_options(self.state.settings.store),
        )

    async def _finalize(self) -> tuple[Response, FinalizeResult]:
        """The response as it ends, and what writing it did (the successor its steers made, to
        be started; whether it blocked its `safety_identifier`). Its last turn's call may have
        written it already (`workflows/response_end.py`): when the response ends as that call
        found, this is what it wrote."""
        snapshot = self._snapshot()
        written = self.end_written
        if written is not None and written.status == snapshot.status:
            return ended(snapshot, written.at), written.written
        final = ended(snapshot, int(workflow.now().timestamp()))
        writing = asyncio.ensure_future(
            workflow.execute_local_activity(
                activity_names.FINALIZE_RESPONSE,
                end_input(
                    final,
                    emit_events=self.state.emit_events,
                    project=self.state.project,
                    tool_results=self.state.tool_results,
                    listings=self.state.listings,
                    parked=self.state.parked,
                    safety=self.state.settings.safety,
                    settled_output=self.state.response.output,
                    decided={*self.state.decisions, *self.state.answered},
                ),
                result_type=FinalizeResult,
                **local_activity_options(self.state.settings.store),
            )
        )
        while True:
            try:
                result: FinalizeResult = await asyncio.shield(writing)
                return final, result
            except asyncio.CancelledError:
                # A cancel that arrives now is too late to change the end: write it anyway.
                continue
