"""Prometheus metrics (the official `prometheus-client`), one registry a process, served at
`/metrics` by the API and by a worker's health port. Temporal's own SDK metrics join the same
scrape (`temporal_runtime.py`).

Names follow Prometheus's conventions (base units, `_seconds`, `_total`). Label values are
bounded: routes are templates, statuses and causes are enums, a model is one the server knows
(`ModelLabels`, following `upstream/known_models.py`) or "other", and an MCP server's host
goes through `Bounded`, which keeps the first `MAX_LABEL_VALUES` it sees and calls the rest
"other". No ids and no user text.
"""

from __future__ import annotations

import contextlib
import hmac
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

REGISTRY = CollectorRegistry(auto_describe=True)

MAX_LABEL_VALUES = 50

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
TOKEN_BUCKETS = (16, 64, 256, 1024, 4096, 16384, 65536, 262144)


class Bounded:
    """A label whose values come from clients: the first `limit` distinct values are kept,
    any later one is "other", so a client cannot grow the series without bound."""

    def __init__(self, limit: int = MAX_LABEL_VALUES) -> None:
        self.limit = limit
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, value: str | None) -> str:
        value = value or "none"
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self.limit:
                self._seen.add(value)
                return value
        return "other"


class ModelLabels:
    """A model as a label value: its name when the server knows it (the models file's, the
    backend's list), "other" for any name a client made up. Until it is told whom to follow
    (`follow`), every name is "other"."""

    def __init__(self) -> None:
        self._knows: Callable[[str], bool] = lambda _model: False

    def follow(self, knows: Callable[[str], bool]) -> None:
        self._knows = knows

    def __call__(self, value: str | None) -> str:
        return value if value and self._knows(value) else "other"


models = ModelLabels()
servers = Bounded()

http_requests = Counter(
    "durable_responses_http_requests_total",
    "HTTP requests answered, by route and status.",
    ["method", "route", "status"],
    registry=REGISTRY,
)
http_duration = Histogram(
    "durable_responses_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer (a stream's whole length).",
    ["method", "route"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
responses_created = Counter(
    "durable_responses_responses_created_total",
    "Responses accepted, by mode and model.",
    ["mode", "model"],
    registry=REGISTRY,
)
workflow_starts = Counter(
    "durable_responses_workflow_starts_total",
    "Responses' workflows started with a worker in this process, by where their first task ran:"
    " `here` (taken at the start) or `task_queue` (no slot was free: it waited for a poll).",
    ["first_task"],
    registry=REGISTRY,
)
responses_ended = Counter(
    "durable_responses_responses_ended_total",
    "Responses that reached a final status, by status and model.",
    ["status", "model"],
    registry=REGISTRY,
)
first_delta = Histogram(
    "durable_responses_first_delta_seconds",
    "Time from a streamed request's arrival to its first output text delta.",
    ["model"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
inference_duration = Histogram(
    "durable_responses_inference_duration_seconds",
    "Calls to the inference backend, by model and outcome.",
    ["model", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
inference_tokens = Counter(
    "durable_responses_inference_tokens_total",
    "Tokens the backend reported, by model and direction (input or output).",
    ["model", "direction"],
    registry=REGISTRY,
)
inference_errors = Counter(
    "durable_responses_inference_errors_total",
    "Failed calls to the backend, by cause and whether they will be retried.",
    ["cause", "retried"],
    registry=REGISTRY,
)
webhook_attempts = Histogram(
    "durable_responses_webhook_attempt_duration_seconds",
    "Webhook delivery attempts, by event type and outcome (delivered, rejected: not a 2xx, "
    "unreachable, unknown_endpoint: not configured on this worker, refused: not allowed by "
    "the egress policy, gone: a project's endpoint deleted since).",
    ["event_type", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
stream_lag = Histogram(
    "durable_responses_stream_event_lag_seconds",
    "Time from an event's write to the event log to a stream sending it on (events written "
    "while the stream was open; the writer's and the API server's clocks).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
    registry=REGISTRY,
)
mcp_calls = Histogram(
    "durable_responses_mcp_call_duration_seconds",
    "MCP tool calls and listings, by server host, operation and outcome.",
    ["server", "operation", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
approval_decisions = Counter(
    "durable_responses_approval_decisions_total", "Approval decisions, by outcome.", ["decision"], registry=REGISTRY
)
approval_wait = Histogram(
    "durable_responses_approval_wait_seconds",
    "Time from a background response beginning to wait for an approval to its decision.",
    buckets=(1, 10, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400),
    registry=REGISTRY,
)
approvals_waiting = Gauge(
    "durable_responses_approvals_waiting",
    "Approval requests background responses wait for now, across the deployment (read from "
    "the store at each scrape of an API server: take the max over replicas, not the sum).",
    registry=REGISTRY,
)
oldest_approval_wait = Gauge(
    "durable_responses_oldest_approval_wait_seconds",
    "How long the longest-waiting approval request has waited (0 with none; from the store, like approvals_waiting).",
    registry=REGISTRY,
)
upstream_rate_gauge = Gauge(
    "durable_responses_upstream_rate_requests_per_second",
    "Each deployment's budget: the requests a second its calls are paced to now (the file's "
    "rpm, or what its 429s taught; absent while no limit is known).",
    ["deployment"],
    registry=REGISTRY,
)
upstream_waiting_gauge = Gauge(
    "durable_responses_upstream_waiting_calls",
    "Calls of this worker waiting for their slot in a deployment's budget.",
    ["deployment"],
    registry=REGISTRY,
)
upstream_waiting_responses_gauge = Gauge(
    "durable_responses_upstream_waiting_responses",
    "Responses waiting (durably, in their workflows) for a deployment's capacity that this worker told to wait "
    "(sum over workers).",
    ["deployment"],
    registry=REGISTRY,
)
upstream_deferrals = Counter(
    "durable_responses_upstream_deferrals_total",
    "Model calls told to wait for a deployment's capacity (the response waits durably, spending no attempt), by lane.",
    ["deployment", "lane"],
    registry=REGISTRY,
)
upstream_429s = Counter(
    "durable_responses_upstream_rate_limited_total",
    "429s from a deployment (each teaches its budget).",
    ["deployment"],
    registry=REGISTRY,
)
upstream_failovers = Counter(
    "durable_responses_upstream_failover_calls_total",
    "Model calls made to a fallback model because the one asked for was down, by the deployment that took them.",
    ["deployment"],
    registry=REGISTRY,
)

web_searches = Histogram(
    "durable_responses_web_search_seconds",
    "Web searches by provider and outcome (`completed`, `unavailable`: retried, `refused`).",
    ["provider", "outcome"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
chunks_embedded_total = Counter(
    "durable_responses_chunks_embedded_total",
    "Chunks of files in vector stores embedded by ingestion.",
    registry=REGISTRY,
)
files_ingested = Counter(
    "durable_responses_files_ingested_total",
    "Files whose ingestion into a vector store ended, by status.",
    ["status"],
    registry=REGISTRY,
)
file_searches = Histogram(
    "durable_responses_file_search_seconds",
    "Vector store searches (the API's and the file_search tool's), by caller.",
    ["caller"],
    buckets=LATENCY_BUCKETS,
    registry=REGISTRY,
)
context_steps = Counter(
    "durable_responses_context_steps_total",
    "What model calls did with a context too long for their window or threshold: `truncated` "
    "(oldest items left out), `compacted` (summarised first), `refused` "
    "(context_length_exceeded), by model.",
    ["model", "step"],
    registry=REGISTRY,
)


async def metrics_endpoint(request: Request) -> Response:
    """`GET /metrics`: this process's metrics, ours and Temporal's SDK's, in Prometheus's text
    format. On an API server, the approvals waiting are counted in the store first."""
    from telemetry.temporal_runtime import TEMPORAL_REGISTRY, drain_temporal_metrics

    drain_temporal_metrics()
    repository = getattr(request.app.state, "repository", None)
    if repository is not None:
        try:
            waiting, oldest = await repository.approvals.waiting()
        except Exception:  # noqa: BLE001 - the rest of the scrape is still worth having (readiness shows the store)
            pass
        else:
            approvals_waiting.set(waiting)
            oldest_approval_wait.set(oldest)
    return Response(generate_latest(REGISTRY) + generate_latest(TEMPORAL_REGISTRY), media_type=CONTENT_TYPE_LATEST)


def guarded_metrics(authorization: str = "") -> Callable[[Request], Awaitable[Response]]:
    """`/metrics`, needing exactly this `Authorization` header when one is set (`METRICS_AUTH`;
    Prometheus sends it from a scrape job's `authorization`)."""
    if not authorization:
        return metrics_endpoint
    expected = authorization.encode()

    async def guarded(request: Request) -> Response:
        if not hmac.compare_digest(request.headers.get("authorization", "").encode(), expected):
            return Response(
                "metrics need the Authorization header set in METRICS_AUTH\n",
                status_code=401,
                media_type="text/plain",
                headers={"www-authenticate": "Bearer"},
            )
        return await metrics_endpoint(request)

    return guarded


def metrics_app(repository: object | None, authorization: str = "") -> Starlette:
    """`/metrics` alone, for a port of its own (`METRICS_PORT`)."""
    app = Starlette(routes=[Route("/metrics", guarded_metrics(authorization), methods=["GET"])])
    app.state.repository = repository
    return app


# ---- recorders: what the rest of the code calls ------------------------------------------------

UPSTREAM_CAUSES = {
    "RetryableUpstreamError": "unavailable",
    "RateLimitedUpstreamError": "rate_limited",
    "RejectedByUpstreamError": "rejected",
    "MisconfiguredUpstreamError": "misconfigured",
}


def response_created(model: str, *, stream: bool, background: bool) -> None:
    mode = ("background_stream" if stream else "background") if background else ("stream" if stream else "synchronous")
    responses_created.labels(mode, models(model)).inc()


def response_ended(model: str, status: str) -> None:
    responses_ended.labels(status, models(model)).inc()


def inference_succeeded(model: str, seconds: float, input_tokens: int, output_tokens: int) -> None:
    label = models(model)
    inference_duration.labels(label, "ok").observe(seconds)
    inference_tokens.labels(label, "input").inc(input_tokens)
    inference_tokens.labels(label, "output").inc(output_tokens)


def inference_failed(model: str, seconds: float, error: BaseException, *, retried: bool) -> None:
    cause = UPSTREAM_CAUSES.get(type(error).__name__, "other")
    inference_duration.labels(models(model), cause).observe(seconds)
    inference_errors.labels(cause, "true" if retried else "false").inc()


def upstream_rate(deployment: str, rate: float | None) -> None:
    if rate is None:
        with contextlib.suppress(KeyError):
            upstream_rate_gauge.remove(deployment)
        return
    upstream_rate_gauge.labels(deployment).set(rate)


def upstream_waiting(deployment: str, change: int) -> None:
    upstream_waiting_gauge.labels(deployment).inc(change)


def upstream_waiting_responses(deployment: str, count: int) -> None:
    upstream_waiting_responses_gauge.labels(deployment).set(count)


def upstream_deferred(deployment: str, lane: str) -> None:
    upstream_deferrals.labels(deployment, lane).inc()


def upstream_rate_limited(deployment: str) -> None:
    upstream_429s.labels(deployment).inc()


def workflow_started(*, here: bool) -> None:
    workflow_starts.labels("here" if here else "task_queue").inc()


def upstream_failover(deployment: str) -> None:
    upstream_failovers.labels(deployment).inc()


def web_search(provider: str, outcome: str, seconds: float) -> None:
    web_searches.labels(provider, outcome).observe(seconds)


def chunks_embedded(count: int) -> None:
    chunks_embedded_total.inc(count)


def file_ingested(status: str) -> None:
    files_ingested.labels(status).inc()


def file_search(caller: str, seconds: float) -> None:
    file_searches.labels(caller).observe(seconds)


def context_step(model: str, step: str) -> None:
    context_steps.labels(models(model), step).inc()


def approval_decided(approve: bool, waited_seconds: float | None) -> None:
    approval_decisions.labels("approve" if approve else "deny").inc()
    if waited_seconds is not None:
        approval_wait.observe(waited_seconds)


def mcp_operation(server_url: str, operation: str, outcome: str, seconds: float) -> None:
    mcp_calls.labels(servers(urlsplit(server_url).netloc or "none"), operation, outcome).observe(seconds)


def webhook_attempt(event_type: str, outcome: str, seconds: float) -> None:
    webhook_attempts.labels(event_type, outcome).observe(seconds)


webhook_backlog_gauge = Gauge(
    "durable_responses_webhook_backlog",
    "Webhook events waiting for their endpoint in the outbox (as the dispatcher last saw)",
    ["endpoint"],
    registry=REGISTRY,
)
webhook_circuit_gauge = Gauge(
    "durable_responses_webhook_circuit_open",
    "Endpoints nothing is sent to while they failed too often in a row (1 for an operator's "
    'endpoint; for endpoint="projects", how many of the projects\' endpoints)',
    ["endpoint"],
    registry=REGISTRY,
)


def webhook_backlog(backlog: Mapping[str, int], open_circuits: Mapping[str, int]) -> None:
    """Events waiting and open circuits, by endpoint label (`worker/webhooks.py`'s `labelled`)."""
    webhook_backlog_gauge.clear()
    webhook_circuit_gauge.clear()
    for endpoint, waiting in backlog.items():
        webhook_backlog_gauge.labels(endpoint).set(waiting)
    for endpoint, count in open_circuits.items():
        webhook_circuit_gauge.labels(endpoint).set(count)


def stream_event_sent(written_at_ms: int | None, opened_at_ms: int) -> None:
    """An event a stream passed on; only those written while it was open show lag (a resumed
    stream's old events do not)."""
    if written_at_ms is not None and written_at_ms >= opened_at_ms:
        stream_lag.observe(max(0.0, time.time() - written_at_ms / 1000))


_DELTA_FRAME = "event: response.output_text.delta\n"


async def first_delta_watch(frames: AsyncIterator[str], started: float, model: str) -> AsyncIterator[str]:
    """Pass a stream's SSE frames on (a chunk may hold several), timing its first text delta
    from `started`."""
    waiting = True
    async for text in frames:
        if waiting and (text.startswith(_DELTA_FRAME) or f"\n\n{_DELTA_FRAME}" in text):
            first_delta_seen(started, model)
            waiting = False
        yield text


def first_delta_seen(started: float, model: str) -> None:
    """A streamed response's first text delta is sent (over SSE or a WebSocket)."""
    first_delta.labels(models(model)).observe(time.perf_counter() - started)
