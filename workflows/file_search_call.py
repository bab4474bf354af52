"""A response's file search: the `file_search` activity for one `file_search_call` the model
made, and what the model is told. A failed search ends its item `failed` and tells the model
why: the response goes on (`retrieval/`, `activities/file_search.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import FileSearchInput, FileSearchResult
    from models.events import StreamEvent
    from models.history_budget import ToolResult
    from models.items import FileSearchCallItem
    from models.responses import Response
    from models.tools import FileSearchTool
    from models.workflow_io import ExecutionSettings
    from workflows.options import search_call_options
    from workflows.web_search_call import Searched, search_failed


async def file_search(
    response: Response,
    call: FileSearchCallItem,
    index: int,
    *,
    project: str,
    settings: ExecutionSettings,
    emit_events: bool,
    first_number: int,
    emit: Callable[[list[StreamEvent]], Awaitable[None]],
) -> Searched:
    tool = next(tool for tool in response.tools if isinstance(tool, FileSearchTool))
    try:
        result = await workflow.execute_activity(
            activity_names.FILE_SEARCH,
            FileSearchInput(
                response_id=response.id,
                project=project,
                call=call,
                output_index=index,
                emit_events=emit_events,
                tool=tool,
                first_number=first_number,
                include_results="file_search_call.results" in response.include,
            ),
            result_type=FileSearchResult,
            **search_call_options(settings.file_search_call),
        )
    except ActivityError as error:
        return await search_failed(error, call, index, emit)
    told = ToolResult(parked_in=call.id) if result.parked else ToolResult(text=result.text)
    return Searched(result.call, told, result.sources, parked=result.parked)
