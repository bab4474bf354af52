"""A response's web search: the `web_search` activity for one `web_search_call` the model
made, and what the model is told. A failed search ends its item `failed` and tells the model
why: the response goes on (`search/`, `activities/web_search.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import WebSearchInput, WebSearchResult
    from models.events import StreamEvent, search_closing
    from models.history_budget import ToolResult
    from models.items import FileSearchCallItem, WebSearchCallItem
    from models.responses import Response
    from models.search import Source
    from models.tools import WebSearchTool
    from models.workflow_io import ExecutionSettings
    from workflows.failures import application_failure, is_cancel_request
    from workflows.options import search_call_options


@dataclass(frozen=True)
class Searched:
    call: WebSearchCallItem | FileSearchCallItem
    """The item as the search ended it."""
    told: ToolResult
    """What the model is told."""
    sources: list[Source] = field(default_factory=list)
    parked: bool = False
    """Its fields (a file search's results) wait in the store, under the call's id."""


async def search_failed(
    error: ActivityError,
    call: WebSearchCallItem | FileSearchCallItem,
    index: int,
    emit: Callable[[list[StreamEvent]], Awaitable[None]],
) -> Searched:
    """A search that failed for good ends its item `failed` and tells the model why (a cancel
    is not a failure: it goes on up)."""
    if is_cancelled_exception(error) or is_cancel_request(error):
        raise error
    failure = application_failure(error)
    reason = failure.message if failure else str(error.cause or error)
    failed = call.model_copy(update={"status": "failed"})
    await emit(search_closing(failed, index))
    what = "web search" if call.type == "web_search_call" else "file search"
    return Searched(failed, ToolResult(text=f"Error: the {what} failed: {reason}"))


async def web_search(
    response: Response,
    call: WebSearchCallItem,
    index: int,
    *,
    settings: ExecutionSettings,
    emit_events: bool,
    first_number: int,
    emit: Callable[[list[StreamEvent]], Awaitable[None]],
) -> Searched:
    tool = next(tool for tool in response.tools if isinstance(tool, WebSearchTool))
    try:
        result = await workflow.execute_activity(
            activity_names.WEB_SEARCH,
            WebSearchInput(
                response_id=response.id,
                call=call,
                output_index=index,
                emit_events=emit_events,
                tool=tool,
                first_number=first_number,
                include_sources="web_search_call.action.sources" in response.include,
            ),
            result_type=WebSearchResult,
            **search_call_options(settings.web_search_call, task_queue=settings.mcp_task_queue),
        )
    except ActivityError as error:
        return await search_failed(error, call, index, emit)
    told = ToolResult(parked_in=call.id) if result.parked else ToolResult(text=result.text)
    return Searched(result.call, told, result.sources)
