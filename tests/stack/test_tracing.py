"""One response is one trace: the HTTP request's span in the API process, then through
Temporal's headers the workflow and activities in a worker process of its own, down to the
model call (GenAI conventions) and the MCP call. The API process records into memory; the
worker exports OTLP over HTTP, as configured by the standard variables, to a collector here."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry import trace
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.mcp_servers import McpTestServer
from tests.support.processes import kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack
from tests.support.waiting import eventually

SECRET = "pelican-orbit-5521"

_exporter: InMemorySpanExporter | None = None


def api_spans() -> InMemorySpanExporter:
    """This process's spans (the tracer provider can be set once per process)."""
    global _exporter
    if _exporter is None:
        _exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_exporter))
        trace.set_tracer_provider(provider)
    return _exporter


class Collector:
    """An OTLP/HTTP trace receiver: keeps each span as (trace id, span id, parent id, name, attributes)."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, str, str, str, dict]] = []
        collector = self

        class Receive(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["content-length"]))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                for resource in request.resource_spans:
                    for scope in resource.scope_spans:
                        for span in scope.spans:
                            attributes = {kv.key: str(kv.value) for kv in span.attributes}
                            collector.spans.append(
                                (
                                    span.trace_id.hex(),
                                    span.span_id.hex(),
                                    span.parent_span_id.hex(),
                                    span.name,
                                    attributes,
                                )
                            )
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


async def test_one_response_is_one_connected_trace_across_the_api_and_a_worker(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str, mcp_server: McpTestServer
):
    exporter = api_spans()
    exporter.clear()
    collector = Collector()
    backend.script(model, [Reply(tool_calls=[("add", {"a": 2, "b": 3})]), Reply(text=f"5 {SECRET}")])
    tool = {
        "type": "mcp",
        "server_label": "tools",
        "server_url": mcp_server.url,
        "require_approval": "never",
        "headers": {"X-Api-Key": SECRET},
    }
    async with running_stack(temporal_address, backend, store, with_worker=False, tracing=True) as stack:
        worker = spawn_worker(
            stack,
            env={
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
                "OTEL_SERVICE_NAME": "durable-responses-worker",
                "OTEL_BSP_SCHEDULE_DELAY": "100",
            },
        )
        try:
            async with stack.sdk(timeout=60) as sdk:
                response = await sdk.responses.create(
                    model=model, input=f"add {SECRET}", tools=[tool], instructions=f"be {SECRET}"
                )
            assert response.status == "completed"
            root = next(span for span in exporter.get_finished_spans() if span.name == "POST /v1/responses")
            trace_id = format(root.context.trace_id, "032x")

            def worker_spans() -> list:
                return [span for span in collector.spans if span[0] == trace_id]

            def arrived() -> bool:
                """The spans asked for, and their parents: a parent ends (and is exported) after
                its children, in a later batch, and killing the worker first loses it."""
                spans = worker_spans()
                ids = {span[1] for span in spans} | {
                    format(span.context.span_id, "016x") for span in exporter.get_finished_spans()
                }
                return {f"chat {model}", "tools/call add"} <= {span[3] for span in spans} and all(
                    span[2] in ids for span in spans if span[2]
                )

            await eventually(arrived, "the worker's spans of the response's trace, with their parents", seconds=30)
        finally:
            kill(worker)
            collector.server.shutdown()

    api = [
        (
            format(span.context.trace_id, "032x"),
            format(span.context.span_id, "016x"),
            format(span.parent.span_id, "016x") if span.parent else "",
            span.name,
            {key: str(value) for key, value in (span.attributes or {}).items()},
        )
        for span in exporter.get_finished_spans()
    ]
    spans = [span for span in api if span[0] == trace_id] + worker_spans()
    names = {span[3] for span in spans}
    assert {
        "POST /v1/responses",
        "StartWorkflow:ResponseWorkflow",
        "RunWorkflow:ResponseWorkflow",
        f"chat {model}",
        "tools/list",
        "tools/call add",
    } <= names, names
    # Connected: every span but the root has its parent in the trace.
    ids = {span[1] for span in spans}
    assert [span[3] for span in spans if span[2] and span[2] not in ids] == []
    assert [span[3] for span in spans if not span[2]] == ["POST /v1/responses"]
    chat = next(span for span in spans if span[3] == f"chat {model}" and "gen_ai.usage.input_tokens" in span[4])
    assert model in chat[4]["gen_ai.request.model"] and '"chat"' in chat[4]["gen_ai.operation.name"]
    assert root.attributes["http.route"] == "/v1/responses" and root.attributes["http.response.status_code"] == 200
    # No user text, and no secret, in any span.
    assert not [span for span in spans if SECRET in repr(span)]
