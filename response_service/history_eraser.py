"""Erases the Temporal histories the store asks to (`store/history_deletions.py`): those of
responses deleted, unstored (`store: false`) once their request had them, expired, or of a
deleted conversation. A workflow still running is left to end first (for at most
`patience_seconds`, then it is deleted all the same, which terminates it)."""

from __future__ import annotations

import asyncio
import logging
import time

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import WorkflowExecutionStatus
from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest, DescribeWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from store.history_deletions import HistoryDeletions

log = logging.getLogger(__name__)

PATIENCE_SECONDS = 300.0


class HistoryEraser:
    def __init__(
        self, deletions: HistoryDeletions, client: Client, *, patience_seconds: float = PATIENCE_SECONDS
    ) -> None:
        self.deletions = deletions
        self.client = client
        self.patience_seconds = patience_seconds

    async def sweep(self) -> int:
        """One pass over what is due; returns how many histories it erased."""
        erased = 0
        now = time.time()
        for workflow_id, requested_at in await self.deletions.due():
            if await self.erase(workflow_id, even_running=now - requested_at > self.patience_seconds):
                erased += 1
        return erased

    async def erase_when_ended(self, workflow_id: str, wait_seconds: float = 30.0) -> None:
        """At once, for a response just deleted: wait for its workflow to end (it ends moments
        after its response does), then erase. The sweep takes over if this fails."""
        deadline = time.monotonic() + wait_seconds
        try:
            while not await self.erase(workflow_id, even_running=False):
                if time.monotonic() > deadline:
                    return
                await asyncio.sleep(0.2)
        except Exception as error:  # noqa: BLE001 - the sweep tries again
            log.info("erasing the history of %s is left to the sweep: %s", workflow_id, error)

    async def erase(self, workflow_id: str, *, even_running: bool) -> bool:
        """Erase the history (True), or leave a running workflow be (False)."""
        execution = WorkflowExecution(workflow_id=workflow_id)
        namespace = self.client.namespace
        try:
            if not even_running:
                described = await self.client.workflow_service.describe_workflow_execution(
                    DescribeWorkflowExecutionRequest(namespace=namespace, execution=execution)
                )
                status = described.workflow_execution_info.status
                if status == WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING:
                    return False
            await self.client.workflow_service.delete_workflow_execution(
                DeleteWorkflowExecutionRequest(namespace=namespace, workflow_execution=execution)
            )
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
        await self.deletions.done(workflow_id)
        return True
