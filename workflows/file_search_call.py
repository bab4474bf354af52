"""A response's file search: the `file_search` activity for one `file_search_call` the model
made, and what the model is told (`file_search/`, `activities/file_search.py`); a hosted tool's
runner (`workflows/hosted_calls.py`)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.activity_io import FileSearchInput, FileSearchResult
    from models.history_budget import ToolResult
    from models.hosted_tools import FILE_SEARCH
    from models.items import FileSearchCallItem
    from models.tools import FileSearchTool
    from workflows.hosted_calls import HostedCall, Ran, failed
    from workflows.options import search_call_options


async def file_search(run: HostedCall, call: FileSearchCallItem, index: int) -> Ran:
    response = run.response
    tool = next(tool for tool in response.tools if isinstance(tool, FileSearchTool))
    try:
        result = await workflow.execute_activity(
            FILE_SEARCH.activity,
            FileSearchInput(
                response_id=response.id,
                project=run.project,
                call=call,
                output_index=index,
                emit_events=run.emit_events,
                tool=tool,
                first_number=run.first_number,
                include_results="file_search_call.results" in response.include,
                moderation=run.held,
            ),
            result_type=FileSearchResult,
            **search_call_options(run.settings.file_search_call),
        )
    except ActivityError as error:
        return await failed(error, run, call, index)
    told = ToolResult(parked_in=call.id) if result.parked else ToolResult(text=result.text)
    return Ran(result.call, told, result.sources, parked=result.parked, checked=result)
