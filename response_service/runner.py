"""The API's side of Temporal: start a response's workflow, wait for it, cancel it."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.api.workflowservice.v1 import GetSystemInfoRequest
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from activities.early_calls import EarlyCalls
from activities.handover import Outcomes
from models import visibility
from models.activity_io import InferenceResult
from models.errors import ApprovalAlreadyAnsweredError, ConflictError, InvalidRequestError, UnavailableError
from models.mcp import ApprovalDecision, McpListing
from models.responses import Response
from models.steering import SteerSignal
from models.webhooks import WebhookSubscription
from models.workflow_io import (
    ApprovalUpdate,
    ApprovalUpdateResult,
    ExecutionSettings,
    ResponseEnded,
    ResponseWorkflowInput,
    side_task_queues,
)
from response_service.history_eraser import HistoryEraser
from store.event_log import EventLog
from store.history_deletions import HistoryDeletions
from store.responses import Responses
from telemetry import metrics
from upstream.registry import ModelRegistry
from workflows import patches
from workflows.turn_input import FirstTurn, first_turn_input

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Started:
    handle: WorkflowHandle[Any, Any]
    handover: asyncio.Future[Response] | None
    """Resolved in-process with the response's end, when its workflow runs on this worker."""


@dataclass
class Launch:
    """A response's workflow being started, and its first turn's model call when that began
    beside the start (`activities/early_calls.py`)."""

    early: asyncio.Future[InferenceResult | None] | None
    streamed: bool = False
    """A client streams the response as it is made (`stream: true`, or WebSocket mode)."""
    starting: asyncio.Future[Started] = field(init=False)
    shown: bool = False
    """A client has been sent what the early call streamed, before the start was acknowledged:
    a start that fails then leaves the stored response, and its call, to the orphan sweep
    (which starts it; the client's stream goes on) instead of removing them."""
    first_sent: asyncio.Future[None] = field(
        init=False, default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    """Resolved once the streaming client has been sent the response's first events, or will
    be sent none (`sent_first`)."""

    def sent_first(self) -> None:
        """The client's stream has sent its first events (or ended without any): a start that
        yields to them goes on (`ResponseRunner._yield_to_the_first_words`)."""
        if not self.first_sent.done():
            self.first_sent.set_result(None)


START_YIELDS_SECONDS = 0.02
"""The longest a response's start waits for its first turn's first words: sent to its client, or
logged (`ResponseRunner._yield_to_the_first_words`)."""

HANDOVER_WAIT_SECONDS = 1.0
"""How long a request whose workflow started on this process's worker waits for the end to be
handed over in-process before it also asks Temporal (the workflow may have moved on to
another worker: its task timed out, or it left this worker's cache)."""


class ResponseRunner:
    def __init__(
        self,
        client: Client,
        task_queue: str,
        settings: ExecutionSettings,
        *,
        task_timeout_seconds: float = 10.0,
        responses: Responses,
        history_deletions: HistoryDeletions,
        local_worker: bool,
        outcomes: Outcomes,
        registry: ModelRegistry | None = None,
        summary_input: bool = False,
        early_calls: EarlyCalls | None = None,
        events: EventLog | None = None,
    ) -> None:
        self.client = client
        self.events = events
        """The event log, whose first event from an early call lets a streamed start go."""
        self.early_calls = early_calls
        """The in-process worker's model calls: a response's first turn is asked while its
        workflow starts (`activities/early_calls.py`); None: the workflow asks."""
        self.summary_input = summary_input
        """Each workflow has a summary, the model and the input's first words (user text,
        readable in the Temporal UI); otherwise none."""
        self.task_queue = task_queue
        self.settings = (
            settings if settings.mcp_task_queue else settings.model_copy(update=side_task_queues(task_queue))
        )
        self.responses = responses
        self.outcomes = outcomes
        """Ends handed over by this process's worker (`activities/handover.py`)."""
        self.registry = registry or ModelRegistry.single("")
        """Where the model names' fallbacks come from (fixed in each response's input)."""
        self.local_worker = local_worker
        """A worker polls the task queue in this process: workflows start on it eagerly, and
        their ends are handed over in-process."""
        # How soon a workflow task held by a dead worker (e.g. running a local activity)
        # is handed to another worker.
        self.task_timeout = timedelta(seconds=task_timeout_seconds)
        self.eraser = HistoryEraser(history_deletions, client)
        self._erasing: set[asyncio.Task[None]] = set()

    async def forget(self, response_id: str, *, with_decisions: bool = True) -> None:
        """Remove an ended response from the store, and its history from Temporal as soon as
        its workflow has ended (the store keeps asking until it is: `response_service/history_eraser.py`)."""
        await self.responses.purge(response_id, with_decisions=with_decisions)
        self.erase_histories_soon([response_id])

    def erase_histories_soon(self, workflow_ids: list[str]) -> None:
        """Erase these histories, the store asks for, now (each once its workflow has ended)
        rather than at the next sweep."""
        for workflow_id in workflow_ids:
            task = asyncio.create_task(self.eraser.erase_when_ended(workflow_id))
            self._erasing.add(task)
            task.add_done_callback(self._erasing.discard)

    async def forget_unstored(self, response_id: str) -> None:
        """An unstored response, once its request or stream has its end."""
        await self.forget(response_id, with_decisions=False)

    async def start(self, response: Response, **options: Any) -> Started:
        """Start the response's workflow and wait for Temporal to acknowledge it (`launch`)."""
        return await self.launch(response, **options).starting

    def launch(
        self,
        response: Response,
        *,
        emit_events: bool,
        if_never_started: bool = False,
        listings: list[McpListing] | None = None,
        approvals: list[ApprovalDecision] | None = None,
        parked: list[str] | None = None,
        first_words: str = "",
        webhooks: list[WebhookSubscription] | None = None,
        project: str = "",
        streamed: bool = False,
    ) -> Launch:
        """Start the response's workflow, and its first turn's call beside it when this process
        makes calls and the request fixes what that turn asks. `streamed`: a client streams it,
        and calls the launch's `sent_first` once it has sent the first events. `if_never_started`: the start
        raises `WorkflowAlreadyStartedError` when a workflow with its id runs or has run
        (recovery must not run a response twice). A response without an event log is waited
        for (`ended`): its end is expected in-process. `webhooks`: the endpoints of the
        response's project, where its events go too."""
        settings = self.settings
        if webhooks:  # the project's endpoints, beside the operator's
            settings = settings.model_copy(
                update={"webhooks": settings.webhooks.model_copy(update={"subscriptions": webhooks})}
            )
        workflow_input = ResponseWorkflowInput(
            response=response,
            settings=settings,
            emit_events=emit_events,
            listings=listings or [],
            approvals=approvals or [],
            parked=parked or [],
            fallbacks=self.registry.fallbacks_of(response.model),
            project=project,
        )
        eager = self.local_worker and not if_never_started
        first = self._first_call(workflow_input) if not if_never_started else None
        early = self.early_calls.begin(first) if self.early_calls is not None and first is not None else None
        launch = Launch(early, streamed=streamed)
        launch.starting = asyncio.ensure_future(
            self._start(
                workflow_input, launch, first, eager=eager, if_never_started=if_never_started, words=first_words
            )
        )
        return launch

    async def _start(
        self,
        workflow_input: ResponseWorkflowInput,
        launch: Launch,
        first: FirstTurn | None,
        *,
        eager: bool,
        if_never_started: bool,
        words: str,
    ) -> Started:
        response, emit_events = workflow_input.response, workflow_input.emit_events
        handover = self.outcomes.expect(response.id) if eager and not emit_events else None
        if eager and emit_events and launch.early is not None:
            await self._yield_to_the_first_words(response.id, launch)
        try:
            handle = await self.client.start_workflow(
                "ResponseWorkflow",
                workflow_input,
                id=response.id,
                task_queue=self.task_queue,
                result_type=ResponseEnded,
                task_timeout=self.task_timeout,
                # A response id is new by construction: one that ran before is never run again.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                # With a worker in this process, the first workflow task runs here at once.
                request_eager_start=eager,
                # The baseline the run takes its patches from, with no marker (workflows/patches.py).
                memo=patches.start_memo(),
                # What the response is, the workflow shows as its current details: stored with
                # every start, it cost the Temporal server (`visibility.shown`).
                static_summary=visibility.summary(response.model, words) if self.summary_input else None,
                # No search attributes: a response writes them once it is more than a request
                # answered (`visibility.search_attributes_on`).
            )
        except WorkflowAlreadyStartedError:
            if if_never_started:
                raise
            # A slow start lost the race to the orphan sweep: the response runs all the same.
            return Started(self.client.get_workflow_handle(response.id, result_type=ResponseEnded), handover)
        except BaseException as error:
            self.outcomes.forget(response.id)
            early = launch.early
            if (
                self.early_calls
                and first
                and early
                and not launch.shown
                and not isinstance(error, asyncio.CancelledError)
            ):
                # The start failed: the call stops before the response is removed. A request
                # cancelled mid-start leaves it: the start may have reached Temporal.
                await self.early_calls.abandon(first, early)
            if isinstance(error, RPCError):
                raise UnavailableError(f"Temporal is unavailable: {error.message}") from error
            raise
        here = _started_here(handle)
        if eager:
            metrics.workflow_started(here=here)
        if handover is not None and not here:
            self.outcomes.forget(response.id)
            handover = None
        return Started(handle, handover)

    async def _yield_to_the_first_words(self, response_id: str, launch: Launch) -> None:
        """Let a response's first turn show its first words before the start begins, for
        `START_YIELDS_SECONDS` at most, when the workflow starts on this process's worker: a
        streamed response's until its client has been sent them (`Launch.sent_first`), another
        one's until the call has logged its first event. Its first workflow task (and the
        Temporal server's work) then takes the CPU the call's first token needs, and nothing a
        client is shown waits for it: a stream begins once the call has logged an event
        (`response_service/starting.py`), and the start's CPU, from its first event to the
        send, cost that send ~0.5 ms (`bench.ab --first-delta`). Without a worker here
        (`serve`), the start's RPC is better made while the call waits for the model than as
        the first event is sent. The response is in the store already, so a process that dies
        in the wait leaves it to the orphan sweep, as one that dies mid-start."""
        assert launch.early is not None
        racing: set[asyncio.Future[Any]] = {launch.early}
        if launch.streamed:
            await asyncio.wait(
                racing | {launch.first_sent}, timeout=START_YIELDS_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
            return
        if self.events is None:
            return
        notifier = self.events.notifier
        waiter = notifier.subscribe(response_id)
        try:
            await asyncio.wait(
                racing | {waiter.future}, timeout=START_YIELDS_SECONDS, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            notifier.unsubscribe(response_id, waiter)

    def _first_call(self, workflow_input: ResponseWorkflowInput) -> FirstTurn | None:
        """The first turn's call, when this process makes calls and the workflow's input fixes it."""
        if self.early_calls is None:
            return None
        return first_turn_input(workflow_input, lease_seconds=self.task_timeout.total_seconds())

    async def ended(self, started: Started) -> Response:
        """Wait for the end of a started response: handed over in-process when its workflow
        runs on this process's worker, otherwise from Temporal."""
        handover = started.handover
        if handover is None:
            return await self._ended(started.handle)
        try:
            try:
                return await asyncio.wait_for(asyncio.shield(handover), HANDOVER_WAIT_SECONDS)
            except TimeoutError:
                pass
            asked = asyncio.ensure_future(self._ended(started.handle))
            try:
                await asyncio.wait({handover, asked}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not asked.done():
                    asked.cancel()  # answered by the handover, or no longer waited for
            if handover.done():
                return handover.result()
            return asked.result()
        finally:
            self.outcomes.forget(started.handle.id)

    async def result(self, response_id: str) -> Response:
        """The end of a running response, from Temporal."""
        handle = self.client.get_workflow_handle(response_id, result_type=ResponseEnded)
        return await self._ended(handle)

    async def _ended(self, handle: WorkflowHandle[Any, Any]) -> Response:
        """The response as its store keeps it once its workflow has ended (the first end
        written stays there, while a workflow task that ran again may have computed another)."""
        try:
            ended = await handle.result()
        except RPCError as error:
            raise UnavailableError(f"Cannot reach the workflow of response {handle.id}: {error.message}") from error
        except WorkflowFailureError as error:
            # A failed or cancelled response's workflow ends Failed or Canceled once the store has
            # its end; anything else is a bug.
            stored = await self.responses.get(handle.id, include_unstored=True)
            if stored is not None and stored.is_terminal:
                return stored
            log.error("workflow %s failed: %s", handle.id, error.cause)
            raise UnavailableError(f"The workflow of response {handle.id} failed: {error.cause}") from error
        # The workflow's result says which response ended; the store has it (large items whole).
        stored = await self.responses.get(ended.id, include_unstored=True)
        if stored is None:
            raise UnavailableError(f"Response {ended.id} ended, but the store no longer has it.")
        return stored

    async def cancel(self, response_id: str) -> None:
        try:
            await self.client.get_workflow_handle(response_id).cancel()
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:  # NOT_FOUND: it has just ended
                raise UnavailableError(f"Temporal is unavailable: {error.message}") from error

    async def decide(self, response_id: str, decision: ApprovalUpdate) -> None:
        """Send an approval decision; the workflow's validator refuses it before it reaches
        history when it is not for an open request."""
        handle = self.client.get_workflow_handle(response_id)
        try:
            await handle.execute_update("decide_approval", decision, result_type=ApprovalUpdateResult)
        except WorkflowUpdateFailedError as error:
            raise _refused(response_id, decision, error.cause) from None
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise ConflictError(
                    f"Response with id '{response_id}' has finished and waits for no approval.", param="response_id"
                ) from error
            raise UnavailableError(f"Temporal is unavailable: {error.message}") from error

    async def steer(self, response_id: str, steer_id: str) -> bool:
        """Tell a running response of a steer the store keeps; False when its workflow has
        ended (the signal is in its history once this returns True)."""
        try:
            await self.client.get_workflow_handle(response_id).signal("steer", SteerSignal(steer_id=steer_id))
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return False
            raise UnavailableError(f"Temporal is unavailable: {error.message}") from error
        return True

    async def temporal_answers(self) -> None:
        """Raises unless Temporal's frontend answers (a cheap call)."""
        await self.client.workflow_service.get_system_info(GetSystemInfoRequest())


def _started_here(handle: WorkflowHandle[Any, Any]) -> bool:
    """Whether Temporal accepted the eager start, handing the first workflow task to this
    process's worker (the SDK records it on the handle)."""
    return bool(getattr(handle, "__temporal_eagerly_started", False))


def _refused(response_id: str, decision: ApprovalUpdate, cause: BaseException | None) -> Exception:
    kind = cause.type if isinstance(cause, ApplicationError) else None
    request_id = decision.approval_request_id
    match kind:
        case "ApprovalAlreadyAnswered":
            return ApprovalAlreadyAnsweredError([request_id])
        case "UnknownApprovalRequest":
            return InvalidRequestError(
                f"Response with id '{response_id}' has no open approval request with id '{request_id}'.",
                param="approval_request_id",
                code="invalid_value",
            )
        case "NotAwaitingApproval":
            return ConflictError(
                f"Response with id '{response_id}' is not waiting for an approval now ({cause}).",
                param="response_id",
            )
    return UnavailableError(f"The approval could not be delivered to response {response_id}: {cause}")
