"""Configuration from the environment (and CLI flags, which override it)."""

from __future__ import annotations

import contextlib
import functools
import os
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, model_validator
from temporalio.converter import DataConverter

from access.egress import EgressPolicy
from access.quotas import QuotaSettings
from chat_completions.client import shown_url
from demo.backend import DEMO_BASE_URL
from demo.lexical_embedder import LEXICAL_MODEL
from demo.model import DEFAULT_DEMO_MODEL, DEMO_CONTEXT_WINDOW
from guardrails.settings import ModerationSettings
from http_plumbing.body import Limits
from models.errors import StartupError
from models.quotas import ProjectQuotas
from models.webhooks import WebhookPolicy, endpoint_id, is_http_url
from models.workflow_io import ExecutionSettings, RetryBudget, code_execution_for
from sandbox.settings import SandboxSettings
from sealing.keyring import KeyRing
from sealing.webhooks import InvalidWebhookSecret, secret_bytes
from telemetry.tracing import tracing_configured
from upstream.registry import ModelRegistry, load_registry
from web_search.provider import ProviderName, SearchSettings
from web_search.searxng import DEFAULT_URL as SEARXNG_DEFAULT_URL
from websocket_mode.settings import WebSocketSettings
from worker.data_converter import data_converter
from worker.defaults import DEFAULT_DATABASE_URL, DEFAULT_TASK_QUEUE
from worker.environment import (
    env_float,
    env_int,
    env_list,
    env_slots,
    sandbox_from_env,
    web_search_provider_from_env,
)

DEFAULT_INFERENCE_BASE_URL = "https://api.openai.com/v1"


def backend_configured() -> bool:
    """Whether the environment names an inference backend or a key for one."""
    return any(
        os.environ.get(name) for name in ("INFERENCE_BASE_URL", "INFERENCE_API_KEY", "OPENAI_API_KEY", "MODELS_FILE")
    )


@functools.lru_cache(maxsize=8)
def _registry_in(path: str) -> tuple[ModelRegistry, list[str]]:
    """The file read once a process (`dev`, `serve` and `worker` each read it at start)."""
    return load_registry(path)


class Settings(BaseModel):
    temporal_address: str | None = None
    """Temporal's frontend; None: from the Temporal client configuration (`TEMPORAL_ADDRESS`,
    a `TEMPORAL_PROFILE` of `TEMPORAL_CONFIG_FILE`), else localhost:7233. A flag wins."""
    namespace: str | None = None
    temporal_environment: bool = True
    """Whether the Temporal client configuration (temporalio.envconfig: `TEMPORAL_*`
    variables and profiles, with TLS and API keys) applies; `dev` uses its own server only."""
    task_queue: str = DEFAULT_TASK_QUEUE
    database_url: str = DEFAULT_DATABASE_URL
    inference_base_url: str = DEFAULT_INFERENCE_BASE_URL
    """An OpenAI-compatible chat-completions API (`.../v1`), or `demo` for the built-in demo model."""
    inference_api_key: str = Field(default="", repr=False)
    models_file: str | None = None
    """The model registry (`MODELS_FILE` / `--models-file`, LiteLLM proxy's format:
    `upstream/registry.py`); None: `inference_base_url` serves every model name."""
    inference_send_reasoning: bool = False
    """Send earlier turns' reasoning back upstream (`reasoning_content` on assistant messages):
    only for backends that accept it."""
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    inference_interactive_wait_seconds: float = 60.0
    """How long an interactive (not background) request may expect to wait for its model's
    capacity; one that would wait longer is refused with a 429 and `retry-after`."""
    stream_poll_seconds: float = 0.02
    cancel_poll_seconds: float = 0.25
    workflow_task_timeout_seconds: float = 10.0
    secrets_key: str = Field(default="", repr=False)
    """The master key ring (`sealing/keyring.py`): seals MCP `headers`/`authorization`,
    webhook secrets, reasoning and Temporal payloads; API and workers need the same one."""
    payload_encryption: bool = True
    """With a secrets key, Temporal payloads are written encrypted (`sealing/payload_codec.py`);
    off, they are written in clear and still read either way."""
    worker_deployment_name: str | None = None
    """Worker Deployment Versioning (`worker/versioning.py`): the deployment this process's
    workers are a version of; None: versioning is off."""
    worker_build_id: str | None = None
    """The version's build id; None: the package's version and a digest of the workflow code."""
    worker_versioning_behavior: Literal["auto_upgrade", "pinned"] = "auto_upgrade"
    """What running responses do when a new version becomes current."""
    summary_input: bool = False
    """The workflow summary in the Temporal UI shows the input's first words (user text);
    otherwise the model only."""
    codec_auth: str = Field(default="", repr=False)
    """The `Authorization` header the codec endpoint (`/codec/decode`) requires; without it the
    endpoint is open only on a server without API keys."""
    codec_allowed_origins: list[str] = Field(default_factory=list)
    """Web origins (a Temporal UI's) whose pages may call the codec endpoint."""
    metrics_auth: str = Field(default="", repr=False)
    """The `Authorization` header `/metrics` requires (none: open)."""
    metrics_port: int | None = None
    """Serve `/metrics` on this port of its own (on the API's host) instead of the API's."""
    max_in_flight_responses: int = 1000
    """Responses one API process takes at once (being created, waited for or streamed); more
    are refused with a 503 and `retry-after`."""
    max_request_bytes: int = 16 * 1024 * 1024
    """The largest request body the API reads."""
    max_json_depth: int = 64
    max_output_tokens: int = 1_000_000
    """The largest `max_output_tokens` a request may ask for."""
    shutdown_grace_seconds: float = 10.0
    """How long a stopping API process lets open requests and streams finish."""
    mcp_max_result_bytes: int = 12 * 1024 * 1024
    """The largest message (a tool result) a streamable-HTTP MCP server may send."""
    unstored_retention_seconds: float = 3600.0
    """How long an ended `store: false` response whose client went away stays in the store."""
    response_retention_days: float = 0.0
    """Stored responses that ended this long ago are deleted, with their Temporal histories
    (0: kept until deleted)."""
    housekeeping_interval_seconds: float = 60.0
    startup_wait_seconds: float = 30.0
    """How long a starting process waits for Temporal and the database to answer."""
    worker_health_port: int | None = None
    """Where `worker` serves /livez and /readyz (none unless set)."""
    database_pool_size: int = 10
    """PostgreSQL connections one process may hold (4 processes x 10 fit the default 100)."""
    egress_allowlist: str = ""
    """Hosts, addresses and networks MCP servers may be at although they are private
    (`access/egress.py`); `dev` allows loopback unless this is set. Code in containers has its
    own (`SANDBOX_EGRESS_ALLOWLIST`: `sandbox/egress_rules.py`)."""
    own_endpoints: list[str] = Field(default_factory=list)
    """`host:port` of this deployment's own listeners beside Temporal, the store and the
    worker's ports (the API's, and `dev`'s Temporal UI): code in a container never reaches them."""
    allowed_hosts: list[str] = Field(default_factory=list)
    """The names the API answers to (`Host`); empty: loopback names on a loopback address,
    any name elsewhere."""
    cors_allow_origins: list[str] = Field(default_factory=list)
    """Web origins whose pages may call the API (CORS); none by default."""
    allow_open: bool = False
    """Whether `serve` on a non-loopback address may run with no API keys."""
    access_log: bool = True
    """A line per HTTP request answered (`telemetry/access_log.py`)."""
    tracing: bool = False
    """OpenTelemetry traces, on when the `OTEL_*` variables configure an exporter
    (`telemetry/tracing.py`)."""
    max_in_flight_per_key: int = 200
    max_streams_per_key: int = 100
    rate_limit_per_minute: int = 0
    project_quotas: ProjectQuotas = Field(default_factory=ProjectQuotas)
    sandbox: SandboxSettings = Field(default_factory=SandboxSettings)
    """How code runs (`code_interpreter`, the hosted `shell`): `sandbox/settings.py`."""
    websocket: WebSocketSettings = Field(default_factory=WebSocketSettings)
    """What WebSocket mode allows (`WEBSOCKET_*`: `websocket_mode/settings.py`)."""
    moderation: ModerationSettings = Field(default_factory=ModerationSettings)
    """How responses are moderated (`MODERATION_*`, `SAFETY_IDENTIFIER_*`: `guardrails/settings.py`)."""
    """What one project may keep (`PROJECT_MAX_FILES` and the rest: `models/quotas.py`)."""
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    webhook_urls: list[str] = Field(default_factory=list, repr=False)
    """Where background responses' events go (`WEBHOOK_URLS`; a URL can hold a token, so it
    is never logged whole and never in Temporal's history)."""
    webhook_secret: str = Field(default="", repr=False)
    """`whsec_...`: signs every delivery (`WEBHOOK_SECRET`)."""
    web_search_provider: ProviderName | Literal["off"] | None = None
    """`WEB_SEARCH_PROVIDER`: searxng, tavily, brave, or demo (the default with the demo model);
    `off` (or None without the demo model): a `web_search` tool is accepted and not offered."""
    web_search_api_key: str = Field(default="", repr=False)
    web_search_url: str | None = None
    """`WEB_SEARCH_URL`: the provider at another base URL (a proxy, a self-hosted instance)."""
    web_search_egress_allowlist: str | None = None
    """`WEB_SEARCH_EGRESS_ALLOWLIST`: the private addresses web search may reach; by default the
    host of `WEB_SEARCH_URL` alone. `EGRESS_ALLOWLIST` (tenants' MCP servers, webhooks) does not
    apply to it, nor it to them."""
    embedding_model: str = "lexical"
    """`EMBEDDING_MODEL`: a model of the registry whose deployment serves `/embeddings`, or
    `lexical` (the default): the embedder that ships in the package (`demo/lexical_embedder.py`)."""
    ingestion_concurrent_activities: int = 8
    """Ingestion steps (read and chunk a file, embed a batch) one worker runs at once."""
    mcp_concurrent_calls: int = 100
    """MCP tool calls one worker runs at once (the `<task queue>-mcp` queue's slots)."""
    webhook_concurrent_deliveries: int = 50
    """Webhook deliveries one worker makes at once (the `<task queue>-webhooks` queue's slots)."""
    max_cached_workflows: int = 1000
    """Workflows a worker keeps in memory between their tasks (LRU); a response waiting for an
    approval beyond that costs no worker memory, and is replayed from history when it resumes."""
    worker_concurrent_responses: int = 1000
    """Responses one worker runs a step of at once, at most: the responses' queue's workflow-task
    and local-activity slots. A turn's model call is a local activity inside its workflow task,
    so each slot is held for a whole call. As many as an API process admits
    (`max_in_flight_responses`): a worker in the API's process (`dev`) then takes every
    admitted response's first task at its start, and none waits in the task queue for a slot.
    Of them, at most `worker_concurrent_workflow_tasks` work at once (`worker/slots.py`)."""
    worker_concurrent_workflow_tasks: int = 64
    """The fewest workflow tasks a worker works on at once, besides those waiting on their
    model call (`WORKER_CONCURRENT_WORKFLOW_TASKS`); more while it finishes tasks fast enough
    (`worker/slots.py`). A burst past it waits in Temporal's task queue instead of being taken
    and timing out."""

    def key_ring(self) -> KeyRing | None:
        return KeyRing.parse(self.secrets_key) if self.secrets_key else None

    def data_converter(self) -> DataConverter:
        """How payloads are written to Temporal: encrypted whenever there is a secrets key."""
        return data_converter(self.key_ring(), encrypt=self.payload_encryption)

    @property
    def uses_demo_model(self) -> bool:
        return self.models_file is None and self.inference_base_url == DEMO_BASE_URL

    def registry(self) -> ModelRegistry:
        """Which deployments serve which model names: the models file's, else one deployment
        (`INFERENCE_BASE_URL`, or the demo model) for every name."""
        if self.models_file is not None:
            return _registry_in(self.models_file)[0]
        return ModelRegistry.single(
            self.inference_base_url,
            self.inference_api_key,
            self.execution.inference.start_to_close_seconds,
            max_input_tokens=DEMO_CONTEXT_WINDOW if self.uses_demo_model else None,
        )

    def registry_warnings(self) -> list[str]:
        """One line naming every key of the models file that is ignored (none without a file)."""
        if self.models_file is None:
            return []
        ignored = _registry_in(self.models_file)[1]
        return [f"models file {self.models_file}: " + "; ".join(ignored)] if ignored else []

    def check_backend(self) -> None:
        if self.models_file is not None:
            self.registry()  # a malformed file stops the process here, in one line naming the entry
            return
        if self.uses_demo_model or self.inference_base_url.startswith(("http://", "https://")):
            return
        raise StartupError(
            f"INFERENCE_BASE_URL must be an http(s):// URL of a chat-completions API or "
            f"'{DEMO_BASE_URL}', not {shown_url(self.inference_base_url)[:200]!r}"
        )

    def backend_summary(self) -> str:
        """One line: which backend answers, and whether a key is set (never the key)."""
        if self.models_file is not None:
            registry = self.registry()
            hosts = sorted({shown_url(deployment.api_base) for deployment in registry.deployments})
            names = registry.names() + (["any other name"] if registry.serves_any else [])
            return (
                f"models: {len(registry.deployments)} deployment(s) from {self.models_file} serve "
                f"{', '.join(names)} (at {', '.join(hosts)})"
            )
        if self.uses_demo_model:
            return (
                f"inference backend: the built-in demo model ({DEFAULT_DEMO_MODEL}); no LLM is called. "
                "Set INFERENCE_BASE_URL (and INFERENCE_API_KEY) to use a real one"
            )
        key = "API key set" if self.inference_api_key else "no API key"
        return f"inference backend: {shown_url(self.inference_base_url)} ({key})"

    def backend_warnings(self) -> list[str]:
        if self.models_file is not None:
            return self.registry_warnings()
        if (
            not self.uses_demo_model
            and not self.inference_api_key
            and shown_url(self.inference_base_url).startswith("https://api.openai.com")
        ):
            return [
                "no API key is set, so api.openai.com will refuse every request: set INFERENCE_API_KEY "
                "(or OPENAI_API_KEY), or INFERENCE_BASE_URL=demo for the demo model"
            ]
        return []

    def check_webhooks(self) -> None:
        """Endpoints need a secret (no event goes unsigned), and each must be an http(s) URL."""
        for url in self.webhook_urls:
            if not is_http_url(url):
                raise StartupError(f"WEBHOOK_URLS must hold http(s):// URLs, not {shown_url(url)!r}")
        if not self.webhook_urls:
            return
        if not self.webhook_secret:
            raise StartupError("WEBHOOK_URLS is set but WEBHOOK_SECRET is not: every event is signed")
        try:
            secret_bytes(self.webhook_secret)
        except InvalidWebhookSecret as error:
            raise StartupError(str(error)) from None

    def webhook_key(self) -> bytes | None:
        return secret_bytes(self.webhook_secret) if self.webhook_secret else None

    def webhook_endpoints(self) -> dict[str, str]:
        """Endpoint id -> URL."""
        return {endpoint_id(url): url for url in self.webhook_urls}

    def webhooks_summary(self) -> str | None:
        if not self.webhook_urls:
            return None
        hosts = ", ".join(f"{urlsplit(url).hostname} ({endpoint_id(url)})" for url in self.webhook_urls)
        return f"webhooks: background responses' events go to {hosts}"

    def limits(self) -> Limits:
        return Limits(
            max_request_bytes=self.max_request_bytes,
            max_json_depth=self.max_json_depth,
            max_output_tokens=self.max_output_tokens,
            body_timeout_seconds=self.body_timeout_seconds,
        )

    def egress(self) -> EgressPolicy:
        return EgressPolicy.parse(self.egress_allowlist)

    def deployment_endpoints(self) -> list[str]:
        """`host:port` of every service of this deployment this process knows of: Temporal's
        frontend, the store, the worker's health and metrics ports, the API (closed to code in
        containers, whatever `SANDBOX_EGRESS_ALLOWLIST` opens)."""
        endpoints = [self.temporal_address or "localhost:7233", *self.own_endpoints]
        database = urlsplit(self.database_url)
        if database.scheme.startswith("postgres"):
            with contextlib.suppress(ValueError):
                endpoints.append(f"{database.hostname or 'localhost'}:{database.port or 5432}")
        endpoints += [f"0.0.0.0:{port}" for port in (self.worker_health_port, self.metrics_port) if port]
        if os.environ.get("PORT", "").isdigit():
            endpoints.append(f"{os.environ.get('HOST') or '0.0.0.0'}:{os.environ['PORT']}")
        return endpoints

    def search_egress(self) -> EgressPolicy:
        """Where web search may connect: public addresses, and the operator's own provider (a
        private SearXNG need not be opened to every tenant's MCP URLs and webhooks)."""
        if self.web_search_egress_allowlist is not None:
            return EgressPolicy.parse(self.web_search_egress_allowlist)
        url = self.web_search_url or (SEARXNG_DEFAULT_URL if self.search().provider == "searxng" else None)
        host = urlsplit(url).hostname if url else None
        return EgressPolicy.parse(host) if host else EgressPolicy()

    def search(self) -> SearchSettings:
        chosen = self.web_search_provider
        provider = None if chosen == "off" else chosen or ("demo" if self.uses_demo_model else None)
        return SearchSettings(provider=provider, api_key=self.web_search_api_key, url=self.web_search_url)

    @model_validator(mode="after")
    def _embeds_with(self) -> Settings:
        """The embeddings model (`EMBEDDING_MODEL`) must be one this server serves."""
        if self.embedding_model != LEXICAL_MODEL and not self.registry().knows(self.embedding_model):
            raise StartupError(
                f"EMBEDDING_MODEL={self.embedding_model!r} is not a model this server serves "
                "(name one of the models file, or leave it unset for the lexical embedder)"
            )
        return self

    @model_validator(mode="after")
    def _offers_web_search(self) -> Settings:
        """Responses learn whether a search provider runs their `web_search` tools."""
        enabled = self.search().enabled
        if self.execution.web_search != enabled:
            self.execution = self.execution.model_copy(update={"web_search": enabled})
        return self

    @model_validator(mode="after")
    def _limits_identifiers(self) -> Settings:
        """Responses learn when their blocks block their `safety_identifier`."""
        self.execution = self.execution.model_copy(update={"safety": self.moderation.safety})
        return self

    @model_validator(mode="after")
    def _runs_code(self) -> Settings:
        """Responses learn whether, and where, the workers run code (`sandbox/`)."""
        wanted = (
            code_execution_for(
                self.task_queue,
                self.sandbox.command_seconds,
                self.sandbox.max_command_seconds,
                self.sandbox.host_wait_seconds,
            )
            if self.sandbox.enabled
            else None
        )
        if self.execution.code_execution != wanted:
            self.execution = self.execution.model_copy(update={"code_execution": wanted})
        return self

    def quotas(self) -> QuotaSettings:
        return QuotaSettings(
            max_in_flight_per_key=self.max_in_flight_per_key,
            max_streams_per_key=self.max_streams_per_key,
            requests_per_minute=self.rate_limit_per_minute,
            project=self.project_quotas,
        )

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        execution = ExecutionSettings(
            inference=RetryBudget(
                start_to_close_seconds=env_float("INFERENCE_TIMEOUT_SECONDS", 600),
                maximum_attempts=env_int("INFERENCE_MAX_ATTEMPTS", 6),
                initial_interval_seconds=env_float("INFERENCE_RETRY_INITIAL_SECONDS", 1),
                maximum_interval_seconds=env_float("INFERENCE_RETRY_MAX_SECONDS", 30),
            ),
            mcp_list=RetryBudget(
                start_to_close_seconds=env_float("MCP_LIST_TIMEOUT_SECONDS", 30),
                maximum_attempts=env_int("MCP_MAX_ATTEMPTS", 3),
            ),
            mcp_call=RetryBudget(
                start_to_close_seconds=env_float("MCP_CALL_TIMEOUT_SECONDS", 6 * 3600),
                maximum_attempts=env_int("MCP_MAX_ATTEMPTS", 3),
            ),
            mcp_heartbeat_seconds=env_float("MCP_HEARTBEAT_SECONDS", 30),
            approval_timeout_seconds=env_float("APPROVAL_TIMEOUT_SECONDS", 7 * 24 * 3600),
            continue_as_new_bytes=env_int("CONTINUE_AS_NEW_BYTES", 8 * 1024 * 1024),
            inference_queue_seconds=env_float("INFERENCE_QUEUE_TIMEOUT_SECONDS", 1800),
            webhooks=WebhookPolicy(
                endpoints=[endpoint_id(url) for url in env_list("WEBHOOK_URLS")],
                give_up_after_seconds=env_float("WEBHOOK_RETRY_HOURS", 72) * 3600,
            ),
        )
        values: dict[str, object] = {
            "inference_base_url": os.environ.get("INFERENCE_BASE_URL") or DEFAULT_INFERENCE_BASE_URL,
            "models_file": os.environ.get("MODELS_FILE") or None,
            "inference_interactive_wait_seconds": env_float("INFERENCE_INTERACTIVE_WAIT_SECONDS", 60.0),
            "inference_api_key": os.environ.get("INFERENCE_API_KEY") or os.environ.get("OPENAI_API_KEY", ""),
            "inference_send_reasoning": os.environ.get("INFERENCE_SEND_REASONING", "").lower() in ("1", "true", "yes"),
            "execution": execution,
            "stream_poll_seconds": env_float("STREAM_POLL_SECONDS", 0.02),
            "cancel_poll_seconds": env_float("CANCEL_POLL_SECONDS", 0.25),
            "workflow_task_timeout_seconds": env_float("WORKFLOW_TASK_TIMEOUT_SECONDS", 10.0),
            "secrets_key": os.environ.get("SECRETS_KEY", ""),
            "payload_encryption": os.environ.get("PAYLOAD_ENCRYPTION", "on").lower() not in ("0", "false", "no", "off"),
            "summary_input": os.environ.get("WORKFLOW_SUMMARY_INPUT", "").lower() in ("1", "true", "yes", "on"),
            "worker_deployment_name": os.environ.get("WORKER_DEPLOYMENT_NAME") or None,
            "worker_build_id": os.environ.get("WORKER_BUILD_ID") or None,
            "worker_versioning_behavior": os.environ.get("WORKER_VERSIONING_BEHAVIOR", "auto_upgrade").lower(),
            "codec_auth": os.environ.get("CODEC_AUTH", ""),
            "codec_allowed_origins": env_list("CODEC_ALLOWED_ORIGINS"),
            "metrics_auth": os.environ.get("METRICS_AUTH", ""),
            "metrics_port": env_int("METRICS_PORT", 0) or None,
            "max_cached_workflows": env_int("MAX_CACHED_WORKFLOWS", 1000),
            "worker_concurrent_responses": env_slots("WORKER_CONCURRENT_RESPONSES", 1000),
            "worker_concurrent_workflow_tasks": env_slots("WORKER_CONCURRENT_WORKFLOW_TASKS", 64),
            "mcp_concurrent_calls": env_slots("MCP_CONCURRENT_CALLS", 100),
            "webhook_concurrent_deliveries": env_slots("WEBHOOK_CONCURRENT_DELIVERIES", 50),
            "max_in_flight_responses": env_int("MAX_INFLIGHT_RESPONSES", 1000),
            "max_request_bytes": env_int("MAX_REQUEST_BYTES", 16 * 1024 * 1024),
            "max_json_depth": env_int("MAX_JSON_DEPTH", 64),
            "max_output_tokens": env_int("MAX_OUTPUT_TOKENS", 1_000_000),
            "shutdown_grace_seconds": env_float("SHUTDOWN_GRACE_SECONDS", 10.0),
            "mcp_max_result_bytes": env_int("MCP_MAX_RESULT_BYTES", 12 * 1024 * 1024),
            "unstored_retention_seconds": env_float("UNSTORED_RETENTION_SECONDS", 3600.0),
            "response_retention_days": env_float("RESPONSE_RETENTION_DAYS", 0.0),
            "housekeeping_interval_seconds": env_float("HOUSEKEEPING_INTERVAL_SECONDS", 60.0),
            "startup_wait_seconds": env_float("STARTUP_WAIT_SECONDS", 30.0),
            "database_pool_size": env_int("DATABASE_POOL_SIZE", 10),
            "worker_health_port": env_int("WORKER_HEALTH_PORT", 0) or None,
            "egress_allowlist": os.environ.get("EGRESS_ALLOWLIST", ""),
            "allowed_hosts": env_list("ALLOWED_HOSTS"),
            "cors_allow_origins": env_list("CORS_ALLOW_ORIGINS"),
            "allow_open": os.environ.get("ALLOW_OPEN", "").lower() in ("1", "true", "yes"),
            "access_log": os.environ.get("ACCESS_LOG", "true").lower() not in ("0", "false", "no", "off"),
            "tracing": tracing_configured(),
            "max_in_flight_per_key": env_int("MAX_INFLIGHT_PER_KEY", 200),
            "max_streams_per_key": env_int("MAX_STREAMS_PER_KEY", 100),
            "rate_limit_per_minute": env_int("RATE_LIMIT_PER_MINUTE", 0),
            "project_quotas": ProjectQuotas.from_env(os.environ),
            "sandbox": sandbox_from_env(overrides.get("database_url") or os.environ.get("DATABASE_URL")),
            "header_timeout_seconds": env_float("HEADER_TIMEOUT_SECONDS", 10.0),
            "body_timeout_seconds": env_float("BODY_TIMEOUT_SECONDS", 30.0),
            "webhook_urls": env_list("WEBHOOK_URLS"),
            "webhook_secret": os.environ.get("WEBHOOK_SECRET", ""),
            "web_search_provider": web_search_provider_from_env(),
            "web_search_api_key": os.environ.get("WEB_SEARCH_API_KEY", ""),
            "web_search_url": os.environ.get("WEB_SEARCH_URL") or None,
            "web_search_egress_allowlist": os.environ.get("WEB_SEARCH_EGRESS_ALLOWLIST"),
            "embedding_model": os.environ.get("EMBEDDING_MODEL", "").strip() or LEXICAL_MODEL,
            "ingestion_concurrent_activities": env_slots("INGESTION_CONCURRENT_ACTIVITIES", 8),
            "moderation": ModerationSettings.from_env(os.environ),
            "websocket": WebSocketSettings(
                enabled=os.environ.get("WEBSOCKET_MODE", "on").lower() not in ("0", "false", "no", "off"),
                idle_seconds=env_float("WEBSOCKET_IDLE_SECONDS", 300.0),
                max_connection_seconds=env_float("WEBSOCKET_MAX_CONNECTION_SECONDS", 3600.0),
                messages_per_second=env_float("WEBSOCKET_MESSAGES_PER_SECOND", 100.0),
            ),
        }
        for name, env in (
            ("task_queue", "TEMPORAL_TASK_QUEUE"),
            ("database_url", "DATABASE_URL"),
        ):
            if os.environ.get(env):
                values[name] = os.environ[env]
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls.model_validate(values)
