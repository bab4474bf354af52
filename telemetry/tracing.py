"""OpenTelemetry traces: off unless configured with the standard `OTEL_*` variables
(`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
`OTEL_TRACES_EXPORTER=otlp|console`; `OTEL_SDK_DISABLED=true` wins; `OTEL_SERVICE_NAME`,
`OTEL_TRACES_SAMPLER`, ... as the SDK reads them).

One trace per response: the HTTP request's span (continuing a caller's `traceparent`), then
through Temporal (temporalio's `TracingInterceptor` carries the context in headers) the
workflow and every activity, down to the model call and the MCP call. Model calls follow the
GenAI semantic conventions (`gen_ai.request.model`, token usage, finish reasons). Spans hold
no prompt, output, instructions or tool arguments.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

tracer = trace.get_tracer("durable_responses")
"""A no-op until a tracer provider is installed (`configure_tracing`)."""

_TRUE = ("1", "true", "yes", "on")


def tracing_configured(environ: dict[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").lower() in _TRUE:
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").lower()
    if exporter == "none":
        return False
    return bool(exporter or env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))


def configure_tracing() -> bool:
    """Install a tracer provider exporting as the `OTEL_*` variables say; False when they
    configure no tracing (then nothing is installed and spans cost next to nothing)."""
    if not tracing_configured():
        return False
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "durable-responses")}).merge(
        OTELResourceDetector().detect()
    )
    provider = TracerProvider(resource=resource)
    if os.environ.get("OTEL_TRACES_EXPORTER", "").lower() == "console":
        exporter: Any = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return True


def temporal_interceptors(enabled: bool) -> list[Any]:
    if not enabled:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor()]


class TracingMiddleware:
    """A server span per HTTP request, named by method and route template, continuing the
    caller's W3C `traceparent` when there is one."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1"): value.decode("latin-1") for key, value in scope.get("headers", [])}
        parent = propagate.extract(headers)
        status = 500

        async def sending(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        with tracer.start_as_current_span(
            scope["method"], context=parent, kind=SpanKind.SERVER, attributes={"http.request.method": scope["method"]}
        ) as span:
            try:
                await self.app(scope, receive, sending)
            finally:
                route = getattr(scope.get("route"), "path", None)
                if route:
                    span.update_name(f"{scope['method']} {route}")
                    span.set_attribute("http.route", route)
                span.set_attribute("http.response.status_code", status)
                if status >= 500:
                    span.set_status(Status(StatusCode.ERROR))


def inference_span(model: str, server_address: str) -> Any:
    """A client span for one model call (GenAI semantic conventions); the caller adds the
    usage and finish reasons it learns."""
    return tracer.start_as_current_span(
        f"chat {model}",
        kind=SpanKind.CLIENT,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
            "gen_ai.provider.name": "openai",
            "server.address": server_address,
        },
    )


def mcp_span(operation: str, tool: str | None, server_address: str) -> Any:
    attributes = {"mcp.method.name": operation, "server.address": server_address}
    if tool:
        attributes["gen_ai.tool.name"] = tool
    return tracer.start_as_current_span(
        f"{operation} {tool}" if tool else operation, kind=SpanKind.CLIENT, attributes=attributes
    )
