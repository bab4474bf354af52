"""MCP activities: list a server's tools, call one tool.

Listing is short and runs as a local activity. A call may take hours: it runs as a regular
activity and heartbeats for as long as there is a sign of life — the tool's progress
notifications, or the server answering a ping while the tool runs. A worker that dies, or
an MCP server that hangs, stops the heartbeats, and Temporal's heartbeat timeout ends the
attempt. Retries belong to Temporal: failures that retrying can mend are raised, the rest
become the call's `error`, which the model is shown.

Retrying may repeat a side effect. Only a call the tool's listing marks read-only or
idempotent (`McpListedTool.repeatable`) may be sent again; any other is sent at most once
(`store/dispatches.py`), and a failure after it was sent ends it with an unknown outcome,
which the model is told. Every call carries its id in `_meta` as an idempotency key, for
servers that deduplicate.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
import time
import typing
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit

from temporalio import activity
from temporalio.exceptions import ApplicationError

from access.egress import EgressPolicy
from activities.cancel_watch import unless_cancelled
from guardrails.tool_outputs import ToolOutputs
from models import activity_names, history_budget
from models.activity_io import (
    CallMcpToolInput,
    CallMcpToolResult,
    ListMcpToolsInput,
    ListMcpToolsResult,
)
from models.errors import (
    CancelRequestedError,
    McpRejectedError,
    McpSentBeforeError,
    McpServerError,
    McpUnreachableError,
    SecretsUnavailableError,
)
from models.events import (
    StreamEvent,
    list_tools_closing,
    list_tools_opening,
    mcp_call_closing,
    mcp_call_opening,
)
from models.items import (
    McpCallItem,
    McpHttpError,
    McpListedTool,
    McpListToolsItem,
    McpProtocolError,
    McpToolExecutionError,
)
from store.cancels import CancelRequests
from store.dispatches import ToolDispatches
from store.event_log import EventLog
from store.mcp_secrets import McpSecretsStore
from store.parked import ParkedFields
from telemetry import metrics
from telemetry.tracing import mcp_span

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

T = TypeVar("T")

CLIENT_MODULE = "activities.mcp_client"
"""Our MCP client, and with it the MCP SDK: the largest library a worker would import (0.2 s of
CPU of its start), and only one that talks to an MCP server needs it."""
INVALID_PARAMS = -32602
MAX_LISTED_TOOLS = 1000
"""Tools one MCP server may list (before `allowed_tools` chooses among them)."""
MAX_LIST_PAGES = 100
"""Pages of a `tools/list` this server follows `nextCursor` through."""
IDEMPOTENCY_KEY = "durable-responses/idempotency-key"
"""The `_meta` entry of a `tools/call` request that names the call, the same on every attempt."""


async def load_mcp_client() -> None:
    """Import `activities.mcp_client` the first time this process talks to an MCP server, in a
    thread, so the event loop goes on serving while the SDK loads. After it, importing from it
    is a lookup."""
    if CLIENT_MODULE not in sys.modules:
        await asyncio.to_thread(importlib.import_module, CLIENT_MODULE)


class McpActivities:
    def __init__(
        self,
        *,
        parked: ParkedFields,
        events: EventLog,
        cancels: CancelRequests,
        dispatches: ToolDispatches,
        mcp_secrets: McpSecretsStore,
        max_result_bytes: int,
        egress: EgressPolicy = EgressPolicy(),
        outputs: ToolOutputs | None = None,
    ) -> None:
        self.egress = egress
        """Which addresses MCP servers may have (`access/egress.py`)."""
        self.outputs = outputs or ToolOutputs(None)
        """Checks a call's result before it is sent, under an `output: block` plan."""
        self.parked = parked
        self.events = events
        self.cancels = cancels
        self.dispatches = dispatches
        """Which calls were sent: one that is not repeatable is sent at most once."""
        self.mcp_secrets = mcp_secrets
        """The request's `headers` and `authorization`, sealed; opened for the call alone."""
        self.max_result_bytes = max_result_bytes

    @activity.defn(name=activity_names.LIST_MCP_TOOLS)
    async def list_mcp_tools(self, request: ListMcpToolsInput) -> ListMcpToolsResult:
        tool = request.tool
        item = McpListToolsItem(id=request.item_id, server_label=tool.server_label)
        if request.emit_events:
            await self._emit(request.response_id, list_tools_opening(item, request.output_index))
        headers = await self._headers(request.response_id, tool.server_label)
        began = time.perf_counter()
        try:
            await load_mcp_client()
            from activities.mcp_client import connected, listed_tool

            with mcp_span("tools/list", None, urlsplit(tool.server_url or "").netloc):
                async with connected(
                    tool.server_label,
                    tool.server_url or "",
                    headers,
                    egress=self.egress,
                    max_result_bytes=self.max_result_bytes,
                ) as client:
                    # Page by page, keeping only what `allowed_tools` lets through (the tools
                    # offered to the model), within MAX_LIST_PAGES pages and MAX_LISTED_TOOLS.
                    offered: list[McpListedTool] = []
                    cursor: str | None = None
                    for _ in range(MAX_LIST_PAGES):
                        page = await client.list_tools(cursor=cursor) if cursor else await client.list_tools()
                        offered.extend(
                            each for each in map(listed_tool, page.tools) if tool.allows(each.name, each.read_only)
                        )
                        cursor = page.next_cursor
                        if not cursor or len(offered) > MAX_LISTED_TOOLS:
                            break
        except McpServerError as error:
            metrics.mcp_operation(tool.server_url or "", "list", _outcome(error), time.perf_counter() - began)
            raise _application_error(error) from error
        if len(offered) > MAX_LISTED_TOOLS or cursor:
            metrics.mcp_operation(tool.server_url or "", "list", "error", time.perf_counter() - began)
            raise ApplicationError(
                f"it offers more than {MAX_LISTED_TOOLS} tools (or more than {MAX_LIST_PAGES} pages of them), more "
                "than this server offers a model from one MCP server; choose fewer tools with `allowed_tools`",
                type="ListingTooLarge",
                non_retryable=True,
            )
        metrics.mcp_operation(tool.server_url or "", "list", "ok", time.perf_counter() - began)
        item = item.model_copy(update={"tools": offered})
        size = history_budget.size_of(item)
        if size > history_budget.MAX_LISTING_BYTES:
            raise ApplicationError(
                f"its tool list is {size // 1024} KiB, more than this server keeps for one MCP server "
                f"({history_budget.MAX_LISTING_BYTES // 1024} KiB); choose fewer tools with `allowed_tools`",
                type="ListingTooLarge",
                non_retryable=True,
            )
        verdict = await self.outputs.verdict(
            request.moderation, request.project, request.response_id, [item.model_dump_json(include={"tools"})]
        )
        if verdict.blocked:  # its tools withheld: the client never sees them, and the response ends
            item = item.model_copy(update={"tools": []})
        if request.emit_events:
            await self._emit(request.response_id, list_tools_closing(item, request.output_index))
        checked = {"moderation": verdict.found, "blocked": verdict.blocked}
        if history_budget.should_park(item):  # the tools' schemas wait in the store
            await self.parked.put(request.response_id, {item.id: history_budget.heavy_fields(item)})
            return ListMcpToolsResult(item=history_budget.stubbed(item), parked=True, **checked)
        return ListMcpToolsResult(item=item, **checked)

    @activity.defn(name=activity_names.CALL_MCP_TOOL)
    async def call_mcp_tool(self, request: CallMcpToolInput) -> CallMcpToolResult:
        """Run the call, unless (or until) the client cancels the response: a cancelled
        response starts no call, and stops the one it runs."""
        response_id = request.response_id
        try:
            return await unless_cancelled(self.cancels.notifier, response_id, self._run(request))
        except CancelRequestedError as error:
            raise ApplicationError(str(error), type=type(error).__name__, non_retryable=True) from error

    async def _run(self, request: CallMcpToolInput) -> CallMcpToolResult:
        response_id = request.response_id
        call = await self._with_arguments(request)
        if await self.cancels.requested([response_id]):
            raise CancelRequestedError(f"response {response_id} was cancelled")
        if request.emit_events:
            await self._emit(response_id, mcp_call_opening(call, request.output_index))
        finished = await self._call(request.server_url, call, response_id, repeatable=bool(request.repeatable))
        # What a client may read of it: its output, and its error whole (content an error
        # carries may be nested: its JSON is read as strings, `guardrails/subjects.readable`).
        shown = finished.model_dump_json(include={"output", "error"})
        verdict = await self.outputs.verdict(request.moderation, request.project, response_id, [shown])
        if verdict.blocked:  # the result withheld: the client never sees it, and the response ends
            finished = finished.model_copy(update={"output": None, "error": None, "status": "incomplete"})
        if request.emit_events:
            await self._emit(response_id, mcp_call_closing(finished, request.output_index))
        # A large result (or large arguments) travels as a stub; its fields wait in the store.
        (carried,), parked = history_budget.split([finished])
        await self.parked.put(response_id, parked)
        return CallMcpToolResult(call=carried, parked=bool(parked), moderation=verdict.found, blocked=verdict.blocked)

    async def _with_arguments(self, request: CallMcpToolInput) -> McpCallItem:
        """The call with its arguments, read from the store when they were too large to travel."""
        parked_in = request.arguments_parked_in
        if parked_in is None:
            return request.call
        fields = (await self.parked.get(request.response_id, [parked_in])).get(parked_in, {})
        if request.call.arguments or "arguments" not in fields:
            return request.call
        return request.call.model_copy(update={"arguments": fields["arguments"]})

    async def _call(self, server_url: str, call: McpCallItem, response_id: str, *, repeatable: bool) -> McpCallItem:
        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            error = McpProtocolError(
                code=INVALID_PARAMS, message=f"arguments are not a JSON object: {_excerpt(call.arguments)}"
            )
            return call.model_copy(update={"error": error, "status": "failed"})
        headers = await self._headers(response_id, call.server_label)
        sent = False

        await load_mcp_client()
        from activities.mcp_client import connected, content_json, output_text

        async def calling(vitals: _Vitals) -> mcp_types.CallToolResult:
            nonlocal sent
            async with connected(
                call.server_label, server_url, headers, egress=self.egress, max_result_bytes=self.max_result_bytes
            ) as client:
                vitals.connected(client)
                # Claimed once connected: a server that cannot be reached has run nothing.
                if not repeatable and not await self.dispatches.claim(response_id, call.id):
                    raise McpSentBeforeError(
                        "an earlier attempt sent the call and was cut off before its answer came back "
                        "(its worker stopped, or the call stopped answering)",
                        code=504,
                    )
                sent = True
                return await client.call_tool(
                    call.name,
                    arguments,
                    progress_callback=vitals.progressed,
                    meta=typing.cast("mcp_types.RequestParamsMeta", {IDEMPOTENCY_KEY: call.id}),
                )

        began = time.perf_counter()

        def measured(outcome: str) -> None:
            metrics.mcp_operation(server_url, "call", outcome, time.perf_counter() - began)

        try:
            with mcp_span("tools/call", call.name, urlsplit(server_url).netloc):
                result = await _while_alive(call.server_label, calling)
        except McpSentBeforeError as error:
            measured("unknown")
            return _outcome_unknown(call, error)
        except McpRejectedError as error:
            measured("rejected")
            failure = (
                McpProtocolError(code=error.code, message=error.message)
                if error.protocol
                else McpHttpError(code=error.code, message=error.message)
            )
            return call.model_copy(update={"error": failure, "status": "failed"})
        except McpServerError as error:
            if sent and not repeatable:
                measured("unknown")
                return _outcome_unknown(call, error)
            measured(_outcome(error))
            raise _application_error(error) from error
        measured("tool_error" if result.is_error else "ok")
        if result.is_error:
            refused = McpToolExecutionError(content=content_json(result))
            return call.model_copy(update={"error": refused, "status": "failed"})
        return call.model_copy(update={"output": output_text(result), "status": "completed"})

    async def _headers(self, response_id: str, server_label: str) -> dict[str, str]:
        try:
            secrets = await self.mcp_secrets.opened(response_id, server_label)
        except SecretsUnavailableError as error:
            raise ApplicationError(str(error), type=type(error).__name__, non_retryable=True) from error
        return secrets.http_headers() if secrets else {}

    async def _emit(self, response_id: str, events: list[StreamEvent]) -> None:
        await self.events.append_once(response_id, [event.wire() for event in events])


class _Vitals:
    """Signs of life of a call: its session opened, the server answered a ping, the tool
    reported progress. Each one is a heartbeat."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.last = asyncio.get_running_loop().time()

    def alive(self) -> None:
        self.last = asyncio.get_running_loop().time()
        activity.heartbeat()

    async def progressed(self, progress: float, total: float | None, message: str | None) -> None:
        """The tool reported progress (the client awaits this: a plain function here made
        each report an error in the log)."""
        self.alive()

    def connected(self, client: Client) -> None:
        self.client = client
        self.alive()


async def _while_alive(label: str, body: Callable[[_Vitals], Awaitable[T]]) -> T:
    """Run `body`, heartbeating on each sign of life and pinging the server while it works.
    Without a sign of life for two heartbeat timeouts (Temporal has timed the attempt out by
    then) the body is abandoned, so no worker keeps a call to a hung server."""
    timeout = (activity.info().heartbeat_timeout or timedelta(seconds=30)).total_seconds()
    interval = timeout / 3
    vitals = _Vitals()
    activity.heartbeat()
    task = asyncio.ensure_future(body(vitals))
    loop = asyncio.get_running_loop()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=interval)
            if done:
                return task.result()
            if vitals.client is not None:
                try:
                    # The session's own ping: sessions use the initialize handshake, where it is current.
                    await asyncio.wait_for(vitals.client.session.send_ping(), timeout=interval)
                    vitals.alive()
                    continue
                except Exception:  # noqa: BLE001 - no answer is no sign of life
                    pass
            if loop.time() - vitals.last > 2 * timeout:
                raise McpUnreachableError(
                    f"MCP server '{label}' stopped responding (no sign of life for {timeout:g} s)", code=504
                )
    finally:
        if not task.done():
            task.cancel()


def _outcome_unknown(call: McpCallItem, error: McpServerError) -> McpCallItem:
    """A call that was sent, may have run, and is not sent again."""
    why = error.message if isinstance(error, McpSentBeforeError) else f"{error.message}, after the call was sent"
    message = (
        f"The outcome of '{call.name}' on MCP server '{call.server_label}' is unknown: {why}. "
        f"It was not run again, because the server does not mark '{call.name}' read-only or "
        f"idempotent. Find out whether it took effect before calling it again; "
        f"a call that needs approval needs it again."
    )
    return call.model_copy(update={"error": McpHttpError(code=error.code, message=message), "status": "failed"})


def _outcome(error: McpServerError) -> str:
    return "unreachable" if isinstance(error, McpUnreachableError) else "error"


def _excerpt(text: str, limit: int = 200) -> str:
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _application_error(error: McpServerError) -> ApplicationError:
    return ApplicationError(
        error.message,
        {"code": error.code},
        type=type(error).__name__,
        non_retryable=isinstance(error, McpRejectedError),
    )
