"""The API's side of Temporal: start a response's workflow, wait for it, cancel it."""

from __future__ import annotations

import logging
from datetime import timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.common import WorkflowIDReusePolicy
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from models.errors import ApprovalAlreadyAnsweredError, ConflictError, InvalidRequestError, UnavailableError
from models.mcp import ApprovalDecision, McpListing
from models.responses import Response
from models.workflow_io import ApprovalUpdate, ApprovalUpdateResult, ExecutionSettings, ResponseWorkflowInput

log = logging.getLogger(__name__)


class ResponseRunner:
    def __init__(
        self, client: Client, task_queue: str, settings: ExecutionSettings, *, task_timeout_seconds: float = 10.0
    ) -> None:
        self.client = client
        self.task_queue = task_queue
        self.settings = settings
        # How soon a workflow task held by a dead worker (e.g. running a local activity)
        # is handed to another worker.
        self.task_timeout = timedelta(seconds=task_timeout_seconds)

    async def start(
        self,
        response: Response,
        *,
        emit_events: bool,
        if_never_started: bool = False,
        listings: list[McpListing] | None = None,
        approvals: list[ApprovalDecision] | None = None,
    ) -> WorkflowHandle:
        """Start the response's workflow. `if_never_started`: raise `WorkflowAlreadyStartedError`
        when a workflow with its id runs or has run (recovery must not run a response twice)."""
        workflow_input = ResponseWorkflowInput(
            response=response, settings=self.settings, emit_events=emit_events,
            listings=listings or [], approvals=approvals or [],
        )
        try:
            return await self.client.start_workflow(
                "ResponseWorkflow",
                workflow_input,
                id=response.id,
                task_queue=self.task_queue,
                result_type=Response,
                task_timeout=self.task_timeout,
                # A response id is new by construction: one that ran before is never run again.
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                # With a worker in this process, the first workflow task runs here at once.
                request_eager_start=not if_never_started,
            )
        except WorkflowAlreadyStartedError:
            if if_never_started:
                raise
            # A slow start lost the race to the orphan sweep: the response runs all the same.
            return self.client.get_workflow_handle(response.id, result_type=Response)
        except RPCError as error:
            raise UnavailableError(f"Temporal is unavailable: {error.message}") from error

    async def result(self, response_id: str) -> Response:
        handle = self.client.get_workflow_handle(response_id, result_type=Response)
        try:
            return await handle.result()
        except RPCError as error:
            raise UnavailableError(f"Cannot reach the workflow of response {response_id}: {error.message}") from error
        except WorkflowFailureError as error:  # only a bug gets here: the workflow ends responses itself
            log.error("workflow %s failed: %s", response_id, error.cause)
            raise UnavailableError(f"The workflow of response {response_id} failed: {error.cause}") from error

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
                raise ConflictError(f"Response with id '{response_id}' has finished and waits for no approval.",
                                    param="response_id") from error
            raise UnavailableError(f"Temporal is unavailable: {error.message}") from error

    async def worker_is_polling(self) -> bool:
        described = await self.client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.client.namespace,
                task_queue=TaskQueue(name=self.task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        return len(described.pollers) > 0


def _refused(response_id: str, decision: ApprovalUpdate, cause: BaseException | None) -> Exception:
    kind = cause.type if isinstance(cause, ApplicationError) else None
    request_id = decision.approval_request_id
    match kind:
        case "ApprovalAlreadyAnswered":
            return ApprovalAlreadyAnsweredError([request_id])
        case "UnknownApprovalRequest":
            return InvalidRequestError(
                f"Response with id '{response_id}' has no open approval request with id '{request_id}'.",
                param="approval_request_id", code="invalid_value",
            )
        case "NotAwaitingApproval":
            return ConflictError(
                f"Response with id '{response_id}' is not waiting for an approval now ({cause}).",
                param="response_id",
            )
    return UnavailableError(f"The approval could not be delivered to response {response_id}: {cause}")
