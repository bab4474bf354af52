"""The HTTP app `serve` and `dev` run: the API's routes (`api/`), the WebSocket mode of
`/v1/responses` (`websocket_mode/`) and the approvals inbox (`inbox/`), behind the host check
and the access middleware. It stands above all three, so none of them imports another's door."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute, Route

from access.egress import EgressPolicy
from access.keys import KeyRing, KeyStore
from access.quotas import Quotas, QuotaSettings
from api import (
    approvals,
    codec,
    containers,
    context_endpoints,
    conversations,
    files,
    health,
    models,
    responses,
    vector_store_files,
    vector_stores,
    webhooks,
)
from api.codec import CodecAccess
from api.ingestions import Ingestions
from api.moderations import moderation_routes
from api.prompts import prompt_routes
from demo.lexical_embedder import LEXICAL_MODEL
from file_search.embedder import Embedder
from guardrails.moderator import Moderator
from guardrails.policy import GuardrailPolicy
from guardrails.settings import ModerationSettings
from http_plumbing.access_middleware import AccessMiddleware
from http_plumbing.body import Limits
from http_plumbing.errors import EXCEPTION_HANDLERS
from http_plumbing.host_check import HostCheck
from inbox.routes import inbox_routes
from response_service.admission import Admission
from response_service.runner import ResponseRunner
from sandbox.settings import SandboxSettings
from store.repository import ResponseRepository
from telemetry.access_log import AccessLog
from telemetry.metrics import guarded_metrics
from telemetry.tracing import TracingMiddleware
from upstream import known_models
from upstream.admission import CapacityCheck
from upstream.budgets import Budgets
from upstream.catalog import ModelCatalog
from upstream.clients import Upstreams
from upstream.gate import UpstreamGate
from upstream.windows import ContextWindows
from websocket_mode.endpoint import websocket_routes
from websocket_mode.settings import WebSocketSettings


def retrieval_routes() -> list[Route]:
    """The Files and Vector Stores APIs (`file_search`'s documents)."""
    store, file, batch = (
        "/v1/vector_stores/{vector_store_id}",
        "/v1/vector_stores/{vector_store_id}/files/{file_id}",
        "/v1/vector_stores/{vector_store_id}/file_batches/{batch_id}",
    )
    return [
        Route("/v1/files", files.create_file, methods=["POST"]),
        Route("/v1/files", files.list_files, methods=["GET"]),
        Route("/v1/files/{file_id}", files.retrieve_file, methods=["GET"]),
        Route("/v1/files/{file_id}", files.delete_file, methods=["DELETE"]),
        Route("/v1/files/{file_id}/content", files.file_content, methods=["GET"]),
        Route("/v1/vector_stores", vector_stores.create_vector_store, methods=["POST"]),
        Route("/v1/vector_stores", vector_stores.list_vector_stores, methods=["GET"]),
        Route(store, vector_stores.retrieve_vector_store, methods=["GET"]),
        Route(store, vector_stores.update_vector_store, methods=["POST"]),
        Route(store, vector_stores.delete_vector_store, methods=["DELETE"]),
        Route(f"{store}/search", vector_stores.search_vector_store, methods=["POST"]),
        Route(f"{store}/files", vector_store_files.create_file, methods=["POST"]),
        Route(f"{store}/files", vector_store_files.list_files, methods=["GET"]),
        Route(file, vector_store_files.retrieve_file, methods=["GET"]),
        Route(file, vector_store_files.update_file, methods=["POST"]),
        Route(file, vector_store_files.delete_file, methods=["DELETE"]),
        Route(f"{file}/content", vector_store_files.file_content, methods=["GET"]),
        Route(f"{store}/file_batches", vector_store_files.create_batch, methods=["POST"]),
        Route(batch, vector_store_files.retrieve_batch, methods=["GET"]),
        Route(f"{batch}/cancel", vector_store_files.cancel_batch, methods=["POST"]),
        Route(f"{batch}/files", vector_store_files.list_batch_files, methods=["GET"]),
    ]


def container_routes() -> list[Route]:
    """The Containers API (`code_interpreter`'s and the hosted shell's containers)."""
    container, file = "/v1/containers/{container_id}", "/v1/containers/{container_id}/files/{file_id}"
    return [
        Route("/v1/containers", containers.create_container, methods=["POST"]),
        Route("/v1/containers", containers.list_containers, methods=["GET"]),
        Route(container, containers.retrieve_container, methods=["GET"]),
        Route(container, containers.delete_container, methods=["DELETE"]),
        Route(f"{container}/files", containers.create_container_file, methods=["POST"]),
        Route(f"{container}/files", containers.list_container_files, methods=["GET"]),
        Route(file, containers.retrieve_container_file, methods=["GET"]),
        Route(file, containers.delete_container_file, methods=["DELETE"]),
        Route(f"{file}/content", containers.container_file_content, methods=["GET"]),
    ]


def create_app(
    repository: ResponseRepository,
    runner: ResponseRunner,
    *,
    max_in_flight: int = 1000,
    limits: Limits | None = None,
    served_model: Callable[[str], str] | None = None,
    mounts: Sequence[BaseRoute] = (),
    egress: EgressPolicy | None = None,
    quotas: QuotaSettings | None = None,
    allowed_hosts: Sequence[str] = ("*",),
    cors_allow_origins: Sequence[str] = (),
    access_log: bool = True,
    tracing: bool = False,
    interactive_wait_seconds: float = 60.0,
    codec_access: CodecAccess | None = None,
    metrics_auth: str = "",
    metrics_route: bool = True,
    embedding_model: str = LEXICAL_MODEL,
    sandbox: SandboxSettings | None = None,
    websocket: WebSocketSettings | None = None,
    moderation: ModerationSettings | None = None,
) -> Starlette:
    """`served_model` names the model that answers for the one a request asks for (the demo
    model answers for every model); `mounts` are routes of other apps (`dev`'s demo tools);
    `egress` says which addresses MCP servers may have; `allowed_hosts` the names the API
    answers to; `cors_allow_origins` the web origins whose pages may call it (none);
    `access_log` whether each request answered is logged (it is always counted in /metrics);
    `tracing` whether each request is a span (OpenTelemetry); the models served are the
    runner's registry (`upstream/registry.py`); `interactive_wait_seconds` how long an
    interactive request may expect to wait for its model's capacity before it is refused (429);
    `codec_access` who may use the codec endpoint (`api/codec.py`); `metrics_auth` the
    `Authorization` header `/metrics` requires (none: open), `metrics_route` whether it is
    served here at all (not when it has a port of its own); `embedding_model` what new vector
    stores embed with (`EMBEDDING_MODEL`); `sandbox` how code runs (`sandbox/settings.py`);
    `websocket` what WebSocket mode allows (`websocket_mode/settings.py`); `moderation` how
    responses are moderated (`guardrails/settings.py`)."""
    ring = KeyRing(KeyStore(repository.db))
    per_key = Quotas(quotas or QuotaSettings())
    middleware = [Middleware(AccessLog, enabled=access_log)]
    if tracing:
        middleware.append(Middleware(TracingMiddleware))
    middleware.append(Middleware(HostCheck, allowed_hosts=list(allowed_hosts)))
    if cors_allow_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_allow_origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=["authorization", "content-type"],
            )
        )
    middleware.append(Middleware(AccessMiddleware, ring=ring, quotas=per_key))
    app = Starlette(
        routes=[
            Route("/v1/responses", responses.create_response, methods=["POST"]),
            Route("/v1/responses", responses.list_responses, methods=["GET"]),
            Route("/v1/responses/compact", context_endpoints.compact, methods=["POST"]),
            Route("/v1/responses/input_tokens", context_endpoints.count_input_tokens, methods=["POST"]),
            Route("/v1/responses/{response_id}", responses.retrieve_response, methods=["GET"]),
            Route("/v1/responses/{response_id}", responses.delete_response, methods=["DELETE"]),
            Route("/v1/responses/{response_id}/cancel", responses.cancel_response, methods=["POST"]),
            Route("/v1/responses/{response_id}/input_items", responses.list_input_items, methods=["GET"]),
            Route("/v1/responses/{response_id}/approvals", approvals.decide_approval, methods=["POST"]),
            Route("/v1/approvals", approvals.list_approvals, methods=["GET"]),
            Route("/v1/models", models.list_models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", models.retrieve_model, methods=["GET"]),
            Route("/v1/webhook_endpoints", webhooks.create_endpoint, methods=["POST"]),
            Route("/v1/webhook_endpoints", webhooks.list_endpoints, methods=["GET"]),
            Route("/v1/webhook_endpoints/{webhook_endpoint_id}", webhooks.retrieve_endpoint, methods=["GET"]),
            Route("/v1/webhook_endpoints/{webhook_endpoint_id}", webhooks.update_endpoint, methods=["POST"]),
            Route("/v1/webhook_endpoints/{webhook_endpoint_id}", webhooks.delete_endpoint, methods=["DELETE"]),
            Route(
                "/v1/webhook_endpoints/{webhook_endpoint_id}/rotate_secret",
                webhooks.rotate_secret,
                methods=["POST"],
            ),
            Route("/v1/webhook_endpoints/{webhook_endpoint_id}/test", webhooks.test_endpoint, methods=["POST"]),
            Route("/v1/conversations", conversations.create_conversation, methods=["POST"]),
            Route("/v1/conversations/{conversation_id}", conversations.retrieve_conversation, methods=["GET"]),
            Route("/v1/conversations/{conversation_id}", conversations.update_conversation, methods=["POST"]),
            Route("/v1/conversations/{conversation_id}", conversations.delete_conversation, methods=["DELETE"]),
            Route("/v1/conversations/{conversation_id}/items", conversations.list_items, methods=["GET"]),
            Route("/v1/conversations/{conversation_id}/items", conversations.add_items, methods=["POST"]),
            Route("/v1/conversations/{conversation_id}/items/{item_id}", conversations.retrieve_item, methods=["GET"]),
            Route("/v1/conversations/{conversation_id}/items/{item_id}", conversations.delete_item, methods=["DELETE"]),
            *retrieval_routes(),
            *prompt_routes(),
            *moderation_routes(),
            *container_routes(),
            Route("/health", health.readyz, methods=["GET"]),
            Route("/readyz", health.readyz, methods=["GET"]),
            Route("/livez", health.livez, methods=["GET"]),
            *([Route("/metrics", guarded_metrics(metrics_auth), methods=["GET"])] if metrics_route else []),
            Route("/codec/decode", codec.decode, methods=["POST"]),
            Route("/codec/encode", codec.encode, methods=["POST"]),
            Route("/codec/decode", codec.preflight, methods=["OPTIONS"]),
            Route("/codec/encode", codec.preflight, methods=["OPTIONS"]),
            *inbox_routes(),
            *mounts,
            *websocket_routes(),
        ],
        middleware=middleware,
        exception_handlers=EXCEPTION_HANDLERS,
    )
    app.state.repository = repository
    app.state.runner = runner
    app.state.admission = Admission(max_in_flight)
    app.state.limits = limits or Limits()
    app.state.served_model = served_model
    app.state.egress = egress or EgressPolicy()
    app.state.keys = ring
    app.state.codec_access = codec_access or CodecAccess(codec=None)
    app.state.quotas = per_key
    app.state.registry = runner.registry
    known_models.start(runner.registry.names())
    app.state.catalog = ModelCatalog(runner.registry)
    app.state.windows = ContextWindows(runner.registry)
    budgets = Budgets(repository.db)
    app.state.capacity = CapacityCheck(runner.registry, budgets, interactive_wait_seconds)
    app.state.embedder = Embedder(embedding_model, runner.registry, Upstreams())
    app.state.ingestions = Ingestions(runner.client, runner.task_queue)
    app.state.sandbox = sandbox or SandboxSettings()
    app.state.websocket = websocket or WebSocketSettings()
    app.state.guardrails = GuardrailPolicy(moderation or ModerationSettings(), runner.registry, repository.strikes)
    app.state.moderator = Moderator(runner.registry, Upstreams(), UpstreamGate(runner.registry, budgets))
    return app
