"""Starting and stopping the ingestion of files into vector stores: one `FileIngestion`
workflow per file (`workflows/ingestion.py`), on the ingestion task queue.

A file whose workflow cannot be started (Temporal is down) leaves no row behind: the caller
removes what it added and answers 503. A workflow already running for the same file and
store is left to finish.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from models.errors import UnavailableError
from models.ingestion import INGESTION_WORKFLOW, FileIngestionInput, ingestion_workflow_id
from models.workflow_io import ingestion_task_queue
from workflows import patches

STARTS_AT_ONCE = 32


@dataclass
class Ingestions:
    client: Client
    task_queue: str
    """The responses' task queue; ingestion runs on its `-ingestion` queue."""

    async def start(self, vector_store_id: str, project: str, embedding_model: str, file_ids: list[str]) -> None:
        """Raises `UnavailableError` when Temporal did not take every start."""
        gate = asyncio.Semaphore(STARTS_AT_ONCE)

        async def start_one(file_id: str) -> None:
            async with gate:
                try:
                    await self.client.start_workflow(
                        INGESTION_WORKFLOW,
                        FileIngestionInput(
                            vector_store_id=vector_store_id,
                            file_id=file_id,
                            project=project,
                            embedding_model=embedding_model,
                        ),
                        id=ingestion_workflow_id(vector_store_id, file_id),
                        task_queue=ingestion_task_queue(self.task_queue),
                        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                        memo=patches.start_memo(),  # the baseline of its patches (workflows/patches.py)
                    )
                except WorkflowAlreadyStartedError:
                    pass

        results = await asyncio.gather(*(start_one(file_id) for file_id in file_ids), return_exceptions=True)
        failed = [result for result in results if isinstance(result, BaseException)]
        if failed:
            if not all(isinstance(error, RPCError) for error in failed):
                raise failed[0]
            raise UnavailableError(
                f"Temporal did not take the ingestion of {len(failed)} file(s): {failed[0]}; try again."
            )

    async def cancel(self, vector_store_id: str, file_ids: list[str]) -> None:
        """Ask each file's workflow to stop (it may have ended already)."""

        async def cancel_one(file_id: str) -> None:
            try:
                await self.client.get_workflow_handle(ingestion_workflow_id(vector_store_id, file_id)).cancel()
            except RPCError:
                pass

        await asyncio.gather(*(cancel_one(file_id) for file_id in file_ids))
