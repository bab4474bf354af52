"""The web search activity: one search by the configured provider (`web_search/`), for one
`web_search_call` the model made.

It announces the call (added, in progress, searching) once, however often it is retried;
a provider that is down (5xx, 429, a timeout) is retried by Temporal within the
`web_search_call` budget, one that refuses (a bad key, a 4xx) is not. Results outside
`filters.allowed_domains` are dropped; what is left is numbered for the model to cite. A
long text for the model is parked in the store, as any large result is (`history_budget`).
"""

from __future__ import annotations

import time

from temporalio import activity
from temporalio.exceptions import ApplicationError

from guardrails.tool_outputs import ToolOutputs
from models import activity_names
from models.activity_io import WebSearchInput, WebSearchResult
from models.errors import SearchRefusedError, SearchUnavailableError
from models.events import StreamEvent, search_closing, search_opening
from models.history_budget import PARK_ITEM_BYTES
from models.items import WebSearchSource
from store.event_log import EventLog
from store.parked import ParkedFields
from telemetry import metrics
from web_search.citations import numbered, shown_to_model
from web_search.provider import MAX_RESULTS, SearchProvider, SearchQuery, allowed

RESULTS_BY_SIZE = {"low": 3, "medium": 5, "high": 8}
MAX_URL_CHARS = 1_000
"""A result whose URL is longer is dropped (few pages have one; a search's sources, which
history carries, stay within what it carries whole)."""
"""Results shown to the model, by the tool's `search_context_size`."""


class SearchActivities:
    def __init__(
        self,
        *,
        events: EventLog,
        parked: ParkedFields,
        provider: SearchProvider | None,
        outputs: ToolOutputs | None = None,
    ) -> None:
        self.events = events
        self.parked = parked
        self.provider = provider
        self.outputs = outputs or ToolOutputs(None)
        """Checks what a search found before any of it is sent, under an `output: block` plan."""

    @activity.defn(name=activity_names.WEB_SEARCH)
    async def web_search(self, request: WebSearchInput) -> WebSearchResult:
        call, index = request.call, request.output_index
        if request.emit_events:
            await self._emit(request.response_id, search_opening(call, index))
        if self.provider is None:  # a worker without the provider its API has
            raise ApplicationError(
                "this worker has no web search provider (WEB_SEARCH_PROVIDER)",
                type=SearchRefusedError.__name__,
                non_retryable=True,
            )
        tool = request.tool
        size = tool.search_context_size or "medium"
        query = SearchQuery(
            query=call.action.query,
            max_results=min(MAX_RESULTS, RESULTS_BY_SIZE[size] * 2),
            allowed_domains=tool.allowed_domains(),
            country=tool.user_location.country if tool.user_location else None,
            depth=size,
        )
        began = time.perf_counter()
        try:
            found = await self.provider.search(query)
        except SearchUnavailableError as error:
            metrics.web_search(self.provider.name, "unavailable", time.perf_counter() - began)
            raise ApplicationError(error.message, type=type(error).__name__) from error
        except SearchRefusedError as error:
            metrics.web_search(self.provider.name, "refused", time.perf_counter() - began)
            raise ApplicationError(error.message, type=type(error).__name__, non_retryable=True) from error
        metrics.web_search(self.provider.name, "completed", time.perf_counter() - began)
        results = [
            result
            for result in found
            if len(result.url) <= MAX_URL_CHARS and allowed(result.url, query.allowed_domains)
        ][: RESULTS_BY_SIZE[size]]
        sources = numbered(results, request.first_number)
        text = shown_to_model(call.action.query, results, sources)
        verdict = await self.outputs.verdict(request.moderation, request.project, request.response_id, [text])
        if verdict.blocked:  # what it found withheld: the client never sees it, and the response ends
            withheld = call.model_copy(update={"status": "incomplete"})
            if request.emit_events:
                await self._emit(request.response_id, search_closing(withheld, index))
            return WebSearchResult(call=withheld, text="", moderation=verdict.found, blocked=True)
        shown = [WebSearchSource(url=source.url) for source in sources] if request.include_sources else None
        done = call.model_copy(
            update={"status": "completed", "action": call.action.model_copy(update={"sources": shown})}
        )
        if request.emit_events:
            await self._emit(request.response_id, search_closing(done, index))
        if len(text.encode()) > PARK_ITEM_BYTES:  # it waits in the store; history carries its place
            await self.parked.put(request.response_id, {call.id: {"output": text}})
            return WebSearchResult(call=done, text="", parked=True, sources=sources, moderation=verdict.found)
        return WebSearchResult(call=done, text=text, sources=sources, moderation=verdict.found)

    async def _emit(self, response_id: str, events: list[StreamEvent]) -> None:
        await self.events.append_once(response_id, [event.wire() for event in events])
