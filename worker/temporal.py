"""The Temporal client (pydantic data converter) and the worker that runs our workflow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.chat_client import ChatClient
from activities.inference import InferenceActivities
from activities.mcp import McpActivities
from activities.store import StoreActivities
from store.repository import ResponseRepository
from worker.settings import Settings
from workflows.response import ResponseWorkflow


async def connect(settings: Settings) -> Client:
    return await Client.connect(
        settings.temporal_address, namespace=settings.namespace, data_converter=pydantic_data_converter
    )


def inference_client(settings: Settings) -> ChatClient:
    # Temporal owns retries: the client never retries on its own.
    return ChatClient(settings.inference_base_url, settings.inference_api_key,
                      timeout_seconds=settings.execution.inference.start_to_close_seconds)


# Workflows run unsandboxed: the sandbox proxies module access on every workflow task and
# routes each payload's serialization through it. Under load that was ~16% of the `dev`
# process's CPU in a profile, and on the floor benchmark (bench/floor.py) the sandboxed shape
# costs ~4-5 ms more per response. Determinism is guarded instead by the replay tests, which
# run every recorded history (and a fresh one of each path) through Temporal's default
# sandboxed runner, and by review.
WORKFLOW_RUNNER = UnsandboxedWorkflowRunner()


@asynccontextmanager
async def build_worker(client: Client, settings: Settings, repository: ResponseRepository) -> AsyncIterator[Worker]:
    """A running worker for our workflow and activities; its backend client closes with it."""
    chat = inference_client(settings)
    inference = InferenceActivities(repository, chat, send_reasoning=settings.inference_send_reasoning)
    store = StoreActivities(repository)
    mcp = McpActivities(repository, max_result_bytes=settings.mcp_max_result_bytes)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        workflows=[ResponseWorkflow],
        workflow_runner=WORKFLOW_RUNNER,
        activities=[
            inference.run_inference, store.record_status, store.emit_events, store.finalize_response,
            mcp.list_mcp_tools, mcp.call_mcp_tool,
        ],
        max_cached_workflows=settings.max_cached_workflows,
    )
    try:
        async with worker:
            try:
                yield worker
            finally:
                await inference.stop()
    finally:
        await chat.aclose()
