"""The API's side of Temporal: start a response's workflow, wait for it, cancel it."""

from __future__ import annotations

import logging
from datetime import timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.common import WorkflowIDReusePolicy
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from models.errors import UnavailableError
from models.responses import Response
from models.workflow_io import ExecutionSettings, ResponseWorkflowInput

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

    async def start(self, response: Response, *, emit_events: bool, if_never_started: bool = False) -> WorkflowHandle:
        """Start the response's workflow. `if_never_started`: raise `WorkflowAlreadyStartedError`
        when a workflow with its id runs or has run (recovery must not run a response twice)."""
        try:
            return await self.client.start_workflow(
                "ResponseWorkflow",
                ResponseWorkflowInput(response=response, settings=self.settings, emit_events=emit_events),
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

    async def worker_is_polling(self) -> bool:
        described = await self.client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=self.client.namespace,
                task_queue=TaskQueue(name=self.task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            )
        )
        return len(described.pollers) > 0
