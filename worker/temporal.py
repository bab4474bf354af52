"""The Temporal client (pydantic data converter) and the worker that runs our workflow."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.envconfig import ClientConfig
from temporalio.service import RPCError, TLSConfig
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.early_calls import EarlyCalls
from activities.file_search import FileSearchActivities
from activities.handover import Outcomes
from activities.inference import InferenceActivities
from activities.ingestion import IngestionActivities
from activities.mcp import McpActivities
from activities.moderation import ModerationActivities
from activities.response_ends import ResponseEnds
from activities.steering import SteeringActivities
from activities.store import StoreActivities
from activities.web_search import SearchActivities
from activities.webhooks import WebhookActivities
from file_search.embedder import Embedder
from file_search.library import Library
from guardrails.moderator import Moderator
from guardrails.tool_outputs import ToolOutputs
from models.errors import StartupError
from models.visibility import SEARCH_ATTRIBUTES
from models.workflow_io import ExecutionSettings, ingestion_task_queue, side_task_queues
from response_service.runner import ResponseRunner
from store.leases import Leases
from store.repository import ResponseRepository
from telemetry.temporal_runtime import temporal_runtime
from telemetry.tracing import temporal_interceptors
from upstream import known_models
from upstream.budgets import Budgets
from upstream.clients import Upstreams
from upstream.gate import UpstreamGate
from web_search.providers import provider_for
from worker.code_execution import code_execution
from worker.housekeeping import keep_house
from worker.presence import keep_present
from worker.settings import Settings
from worker.shutdown import Shutdown
from worker.slots import response_slots
from worker.versioning import make_current_if_first, worker_versioning
from worker.webhooks import LEASE as DISPATCHER_LEASE
from worker.webhooks import ROUND_SECONDS, WebhookDispatcher
from workflows.ingestion import FileIngestionWorkflow
from workflows.response import ResponseWorkflow
from workflows.webhooks import WebhookDeliveryWorkflow

DEFAULT_ADDRESS = "localhost:7233"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class TemporalConnection:
    """Where and how to reach Temporal: the Temporal client configuration operators already
    keep for the `temporal` CLI (temporalio.envconfig: `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`,
    `TEMPORAL_API_KEY`, `TEMPORAL_TLS*`, or a `TEMPORAL_PROFILE` of the TOML file at
    `TEMPORAL_CONFIG_FILE`), with `--temporal-address` and `--namespace` winning."""

    target_host: str
    namespace: str
    api_key: str | None = field(default=None, repr=False)
    tls: bool | TLSConfig = False
    rpc_metadata: Mapping[str, str] = field(default_factory=dict, repr=False)

    def describe(self) -> str:
        extras = [name for name, present in (("TLS", self.tls), ("API key", self.api_key)) if present]
        return f"{self.target_host} (namespace {self.namespace}{''.join(', ' + extra for extra in extras)})"


def temporal_connection(settings: Settings) -> TemporalConnection:
    options: dict[str, Any] = {}
    if settings.temporal_environment:
        try:
            options = dict(ClientConfig.load_client_connect_config())
        except Exception as error:  # noqa: BLE001 - a bad file, profile or certificate path, said in one line
            said = " ".join(str(error).split())  # one line, whatever the TOML parser wrote
            raise StartupError(
                f"cannot read the Temporal client configuration (TEMPORAL_* variables, "
                f"TEMPORAL_CONFIG_FILE, TEMPORAL_PROFILE): {said}"
            ) from error
    if settings.temporal_address:
        options["target_host"] = settings.temporal_address
    if settings.namespace:
        options["namespace"] = settings.namespace
    return TemporalConnection(
        target_host=options.get("target_host") or DEFAULT_ADDRESS,
        namespace=options.get("namespace") or DEFAULT_NAMESPACE,
        api_key=options.get("api_key"),
        tls=options.get("tls", False),
        rpc_metadata=options.get("rpc_metadata") or {},
    )


async def connect(settings: Settings) -> Client:
    connection = temporal_connection(settings)
    return await Client.connect(
        connection.target_host,
        namespace=connection.namespace,
        api_key=connection.api_key,
        tls=connection.tls,
        rpc_metadata=dict(connection.rpc_metadata),
        data_converter=settings.data_converter(),
        runtime=temporal_runtime(),
        interceptors=temporal_interceptors(settings.tracing),
    )


async def with_visibility(client: Client, execution: ExecutionSettings) -> ExecutionSettings:
    """`execution`, telling workflows whether the namespace has the response search attributes
    (`models/visibility.py`); says once which it is."""
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest

    try:
        answer = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=client.namespace)
        )
        missing = [key.name for key in SEARCH_ATTRIBUTES if key.name not in answer.custom_attributes]
    except RPCError as error:
        missing = [key.name for key in SEARCH_ATTRIBUTES]
        log.info("cannot list the namespace's search attributes (%s)", error.message)
    if missing:
        log.info(
            "namespace %s has no search attribute %s: responses are not filterable by state in Temporal "
            "(see the README's Temporal UI section)",
            client.namespace,
            ", ".join(missing),
        )
    return execution.model_copy(update={"search_attributes": not missing})


log = logging.getLogger(__name__)


# Workflows run unsandboxed: the sandbox proxies module access on every workflow task and
# routes each payload's serialization through it. Under load that was ~16% of the `dev`
# process's CPU in a profile, and on the floor benchmark (bench/floor.py) the sandboxed shape
# costs ~4-5 ms more per response. Determinism is guarded instead by the replay tests, which
# run every recorded history (and a fresh one of each path) through Temporal's default
# sandboxed runner, and by review.
WORKFLOW_RUNNER = UnsandboxedWorkflowRunner()


@dataclass(frozen=True)
class ModelCalls:
    """The model calls and input checks of a process: its worker's activities, or an API
    process's own early calls (`activities/early_calls.py`), on one set of backend clients."""

    upstreams: Upstreams
    inference: InferenceActivities
    moderation: ModerationActivities

    @classmethod
    def of(
        cls,
        settings: Settings,
        repository: ResponseRepository,
        *,
        for_api: bool = False,
        ends: ResponseEnds | None = None,
    ) -> ModelCalls:
        """`for_api`: an API process's own, whose turns' ends are announced to the workers;
        `ends`: a worker's, which writes the end of a response its call ends."""
        upstreams = Upstreams(default_timeout_seconds=settings.execution.inference.start_to_close_seconds)
        gate = UpstreamGate(settings.registry(), Budgets(repository.db))
        moderator = Moderator(settings.registry(), upstreams, gate)
        inference = InferenceActivities(
            gate,
            upstreams,
            turns=repository.turns,
            events=repository.events,
            parked=repository.parked,
            cancels=repository.cancels,
            secret_box=repository.secret_box,
            send_reasoning=settings.inference_send_reasoning,
            moderator=moderator,
            announce_turns=for_api,
            ends=ends,
        )
        return cls(
            upstreams,
            inference,
            ModerationActivities(responses=repository.responses, parked=repository.parked, moderator=moderator),
        )

    @asynccontextmanager
    async def lent(self, early_calls: EarlyCalls, grace_seconds: float) -> AsyncIterator[None]:
        """Lent to `early_calls` while the block runs; then calls still running get
        `grace_seconds` (their claims are released: a worker takes their turns over)."""
        early_calls.serve(self.inference, self.moderation)
        try:
            yield
        finally:
            early_calls.withdraw()
            await self.inference.stop(grace_seconds)
            await self.upstreams.aclose()


def response_runner(
    client: Client,
    settings: Settings,
    repository: ResponseRepository,
    outcomes: Outcomes,
    *,
    local_worker: bool,
    early_calls: EarlyCalls | None = None,
) -> ResponseRunner:
    """What starts responses' workflows: an API's, the orphan sweep's, a steered response's
    successor's. `early_calls`: the API's, whose worker runs in its process."""
    return ResponseRunner(
        client,
        settings.task_queue,
        settings.execution,
        task_timeout_seconds=settings.workflow_task_timeout_seconds,
        responses=repository.responses,
        history_deletions=repository.history_deletions,
        local_worker=local_worker,
        outcomes=outcomes,
        registry=settings.registry(),
        summary_input=settings.summary_input,
        early_calls=early_calls,
        events=repository.events,
    )


@asynccontextmanager
async def build_worker(
    client: Client,
    settings: Settings,
    repository: ResponseRepository,
    *,
    outcomes: Outcomes,
    shutdown: Shutdown | None = None,
    grace_seconds: float = 0.0,
    early_calls: EarlyCalls | None = None,
) -> AsyncIterator[Worker]:
    """A running worker for our workflow and activities; its backend client closes with it.
    A `shutdown` learns how many model calls it has running. When it stops, it polls for no
    more work; model and MCP calls under way get `grace_seconds` to finish, then are
    abandoned (a model call) or cancelled (an MCP call), and Temporal gives them to another
    worker: the response goes on there, with nothing lost."""
    known_models.start(settings.registry().names())
    ends = ResponseEnds(
        responses=repository.responses, parked=repository.parked, strikes=repository.strikes, outcomes=outcomes
    )
    calls = ModelCalls.of(settings, repository, ends=ends)
    upstreams, inference, moderating = calls.upstreams, calls.inference, calls.moderation
    gate = calls.inference.gate
    outputs = ToolOutputs(inference.moderator)
    """Hosted tools' outputs checked before they are sent, under an `output: block` plan."""
    store = StoreActivities(
        responses=repository.responses, approvals=repository.approvals, events=repository.events, ends=ends
    )
    steering = SteeringActivities(
        responses=repository.responses,
        starts=repository.starts,
        runner=response_runner(client, settings, repository, outcomes, local_worker=False),
    )
    mcp = McpActivities(
        parked=repository.parked,
        events=repository.events,
        cancels=repository.cancels,
        dispatches=repository.dispatches,
        mcp_secrets=repository.mcp_secrets,
        max_result_bytes=settings.mcp_max_result_bytes,
        egress=settings.egress(),
        outputs=outputs,
    )
    searching = SearchActivities(
        events=repository.events,
        parked=repository.parked,
        provider=provider_for(settings.search(), settings.search_egress()),
        outputs=outputs,
    )
    embedder = Embedder(settings.embedding_model, settings.registry(), upstreams, gate)
    library = Library(repository.vector_stores, repository.chunks, repository.files)
    ingestion = IngestionActivities(library=library, embedder=embedder)
    file_searching = FileSearchActivities(
        library=library, events=repository.events, parked=repository.parked, embedder=embedder, outputs=outputs
    )
    webhooks = WebhookActivities(
        settings.webhook_endpoints(),
        settings.webhook_key(),
        settings.egress(),
        project_endpoints=repository.webhook_endpoints,
        outbox=repository.webhook_outbox,
    )
    dispatcher = WebhookDispatcher(
        repository.webhook_outbox, webhooks.deliver_webhook, concurrency=settings.webhook_concurrent_deliveries
    )
    grace = timedelta(seconds=grace_seconds)
    versioning = worker_versioning(
        settings.worker_deployment_name, settings.worker_build_id, settings.worker_versioning_behavior
    )
    # A thread per workflow task it may take at once (Temporal's default is 500, or the fixed count).
    workflow_threads = ThreadPoolExecutor(
        max_workers=settings.worker_concurrent_responses, thread_name_prefix="temporal_workflow_"
    )
    slots = response_slots(settings.worker_concurrent_responses, settings.worker_concurrent_workflow_tasks)
    worker = Worker(
        client,
        task_queue=settings.task_queue,
        **versioning,
        # The side queues' work is registered here too, for responses that started before
        # those queues existed (their calls and deliveries are scheduled on this queue).
        workflows=[ResponseWorkflow, WebhookDeliveryWorkflow],
        workflow_runner=WORKFLOW_RUNNER,
        activities=[
            inference.run_inference,
            store.record_status,
            store.emit_events,
            store.finalize_response,
            store.record_approval_wait,
            steering.start_successor,
            moderating.moderate_input,
            webhooks.enqueue_webhooks,
            mcp.list_mcp_tools,
            mcp.call_mcp_tool,
            searching.web_search,
            file_searching.file_search,
            webhooks.deliver_webhook,
        ],
        max_cached_workflows=settings.max_cached_workflows,
        # As many as an API process admits, of which a bounded few work at once (`worker/slots.py`).
        tuner=slots.tuner,
        interceptors=[slots.interceptor],
        workflow_task_executor=workflow_threads,
        graceful_shutdown_timeout=grace,
    )
    # Each workload with slots of its own: a slow MCP server or a dead webhook receiver takes
    # only its own queue's slots, never those of the responses' workflow tasks.
    queues = side_task_queues(settings.task_queue)
    side_workers = [
        Worker(
            client,
            task_queue=queues["mcp_task_queue"],
            **versioning,
            activities=[mcp.call_mcp_tool, searching.web_search],
            max_concurrent_activities=settings.mcp_concurrent_calls,
            graceful_shutdown_timeout=grace,
        ),
        Worker(
            client,
            task_queue=ingestion_task_queue(settings.task_queue),
            **versioning,
            workflows=[FileIngestionWorkflow],
            workflow_runner=WORKFLOW_RUNNER,
            activities=[
                ingestion.chunk_file,
                ingestion.embed_next_chunks,
                ingestion.embed_chunks,
                ingestion.settle_file,
            ],
            max_concurrent_activities=settings.ingestion_concurrent_activities,
            max_cached_workflows=100,
            graceful_shutdown_timeout=grace,
        ),
        Worker(
            client,
            task_queue=queues["webhook_task_queue"],
            **versioning,
            workflows=[WebhookDeliveryWorkflow],
            workflow_runner=WORKFLOW_RUNNER,
            activities=[webhooks.deliver_webhook],
            max_concurrent_activities=settings.webhook_concurrent_deliveries,
            max_cached_workflows=100,
            graceful_shutdown_timeout=grace,
        ),
    ]
    if shutdown is not None:
        shutdown.track("model call", lambda: len(inference.calls), waited=grace_seconds > 0)
    stopping = asyncio.Event()
    leaving: asyncio.Future[Any] | None = None
    running_code = code_execution(client, settings, repository, grace=grace, versioning=versioning, outputs=outputs)
    side_workers += await running_code.__aenter__()
    try:
        # Entered and left by hand, not with `async with`, so leaving is bounded: see below.
        await worker.__aenter__()
        for side in side_workers:
            await side.__aenter__()
        if "deployment_config" in versioning:  # its first version is current from the start; later ones are promoted
            await make_current_if_first(client, versioning["deployment_config"])
        present = asyncio.create_task(keep_present(repository.workers, settings.task_queue, stopping))
        await repository.db.wakeups.hear()  # an event put by another process wakes the dispatcher
        dispatching = asyncio.create_task(
            keep_house(
                {DISPATCHER_LEASE: dispatcher.round},
                ROUND_SECONDS,
                stopping,
                leases=Leases(repository.db),
                woken=repository.webhook_outbox.nudged,
                due={DISPATCHER_LEASE: dispatcher.due},
            )
        )
        if early_calls is not None:
            early_calls.serve(inference, moderating)
        try:
            yield worker
        finally:
            if early_calls is not None:
                early_calls.withdraw()
            stopping.set()  # no longer present: readiness turns false at once
            dispatching.cancel()  # an attempt under way is made again by the next holder: events are at least once
            with contextlib.suppress(asyncio.CancelledError):
                await dispatching
            leaving = asyncio.ensure_future(
                asyncio.gather(  # no more polls; MCP calls' grace
                    worker.__aexit__(None, None, None), *(side.__aexit__(None, None, None) for side in side_workers)
                )
            )
            await inference.stop(grace_seconds)
            await _left_within(leaving, WORKER_STOP_SECONDS)
            await present
    finally:
        await running_code.__aexit__(None, None, None)
        await upstreams.aclose()
        # A task Temporal's worker left still ends in its thread; one still leaving may yet be given one.
        if leaving is None or leaving.done():
            workflow_threads.shutdown(wait=False)
        else:
            leaving.add_done_callback(lambda _: workflow_threads.shutdown(wait=False))


WORKER_STOP_SECONDS = 3.0
"""How long a stopping worker waits for Temporal's worker to finish its tasks once its model
calls are abandoned. Temporal's core retries a local activity even while its worker shuts
down (sdk-core #709), and the abandoned model calls never end, so a workflow task that waits
on one would hold the stop until the process is killed; past this bound the process leaves
it to Temporal, which hands the task to the next worker when its timeout passes."""


async def _left_within(leaving: asyncio.Future[Any], seconds: float) -> None:
    done, _ = await asyncio.wait({leaving}, timeout=seconds)
    if leaving in done:
        leaving.result()
    else:
        log.info("worker stopped with workflow tasks unfinished; Temporal gives them to the next worker")
