"""The file search activity: one search of the request's vector stores (`file_search/`), for
one `file_search_call` the model made.

It announces the call (added, in progress, searching) once, however often it is retried. A
store that is gone by now is left out; an embeddings backend that is down is retried by
Temporal within the `file_search_call` budget, one that refuses is not. The chunks found are
numbered for the model to cite (`file_citation`). A long text for the model, and results
that `include` asks for and that are large, are parked in the store with the call's id
(`history_budget`).
"""

from __future__ import annotations

import time

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.capacity_waits import capacity_wait
from file_search.embedder import Embedder
from file_search.library import Library
from file_search.searching import search, shown_to_model
from guardrails.tool_outputs import ToolOutputs
from models import activity_names
from models.activity_io import FileSearchInput, FileSearchResult
from models.errors import CapacityWaitError, RetryableUpstreamError, UpstreamError
from models.events import StreamEvent, search_closing, search_opening
from models.history_budget import PARK_ITEM_BYTES, size_of
from models.items import FileSearchResult as ResultEntry
from models.search import Source
from store.event_log import EventLog
from store.parked import ParkedFields
from telemetry import metrics

DEFAULT_RESULTS = 10


class FileSearchActivities:
    def __init__(
        self,
        *,
        library: Library,
        events: EventLog,
        parked: ParkedFields,
        embedder: Embedder,
        outputs: ToolOutputs | None = None,
    ) -> None:
        self.library = library
        self.events = events
        self.parked = parked
        self.embedder = embedder
        self.outputs = outputs or ToolOutputs(None)
        """Checks what a search found before any of it is sent, under an `output: block` plan."""

    @activity.defn(name=activity_names.FILE_SEARCH)
    async def file_search(self, request: FileSearchInput) -> FileSearchResult:
        call, index, tool = request.call, request.output_index, request.tool
        if request.emit_events:
            await self._emit(request.response_id, search_opening(call, index))
        stores = await self.library.vector_stores.some(tool.vector_store_ids, request.project)
        query = call.queries[0] if call.queries else ""
        began = time.perf_counter()
        try:
            hits = await search(
                self.library,
                self.embedder,
                list(stores.values()),
                [query],
                project=request.project,
                max_num_results=tool.max_num_results or DEFAULT_RESULTS,
                filters=tool.filters,
                ranking_options=tool.ranking_options,
            )
        except CapacityWaitError as error:  # the embeddings budget has room later: come back then
            raise capacity_wait(error) from error
        except RetryableUpstreamError as error:
            raise ApplicationError(error.message, type=type(error).__name__) from error
        except UpstreamError as error:
            raise ApplicationError(error.message, type=type(error).__name__, non_retryable=True) from error
        metrics.file_search("tool", time.perf_counter() - began)
        sources = [
            Source(number=request.first_number + offset, file_id=hit.file_id, filename=hit.filename)
            for offset, hit in enumerate(hits)
        ]
        results = (
            [
                ResultEntry(
                    file_id=hit.file_id,
                    filename=hit.filename,
                    score=hit.score,
                    text=hit.text,
                    attributes=hit.attributes,
                )
                for hit in hits
            ]
            if request.include_results
            else None
        )
        text = shown_to_model(query, hits, request.first_number)
        verdict = await self.outputs.verdict(request.moderation, request.project, request.response_id, [text])
        if verdict.blocked:  # what it found withheld: the client never sees it, and the response ends
            withheld = call.model_copy(update={"status": "incomplete", "results": None})
            if request.emit_events:
                await self._emit(request.response_id, search_closing(withheld, index))
            return FileSearchResult(call=withheld, text="", moderation=verdict.found, blocked=True)
        done = call.model_copy(update={"status": "completed", "results": results})
        if request.emit_events:
            await self._emit(request.response_id, search_closing(done, index))
        if len(text.encode()) > PARK_ITEM_BYTES or size_of(done) > PARK_ITEM_BYTES:
            # it waits in the store; history carries its place
            fields = {
                "output": text,
                "results": [entry.model_dump(mode="json") for entry in results or []] if results is not None else None,
            }
            await self.parked.put(request.response_id, {call.id: fields})
            return FileSearchResult(
                call=done.model_copy(update={"results": None}),
                text="",
                parked=True,
                sources=sources,
                moderation=verdict.found,
            )
        return FileSearchResult(call=done, text=text, sources=sources, moderation=verdict.found)

    async def _emit(self, response_id: str, events: list[StreamEvent]) -> None:
        await self.events.append_once(response_id, [event.wire() for event in events])
