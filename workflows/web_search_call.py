"""A response's web search: the `web_search` activity for one `web_search_call` the model
made, and what the model is told (`web_search/`, `activities/web_search.py`); a hosted tool's
runner (`workflows/hosted_calls.py`)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models.activity_io import WebSearchInput, WebSearchResult
    from models.history_budget import ToolResult
    from models.hosted_tools import WEB_SEARCH
    from models.items import WebSearchCallItem
    from models.tools import WebSearchTool
    from workflows.hosted_calls import HostedCall, Ran, failed
    from workflows.options import search_call_options


async def web_search(run: HostedCall, call: WebSearchCallItem, index: int) -> Ran:
    response = run.response
    tool = next(tool for tool in response.tools if isinstance(tool, WebSearchTool))
    try:
        result = await workflow.execute_activity(
            WEB_SEARCH.activity,
            WebSearchInput(
                response_id=response.id,
                call=call,
                output_index=index,
                emit_events=run.emit_events,
                tool=tool,
                first_number=run.first_number,
                include_sources="web_search_call.action.sources" in response.include,
                project=run.project,
                moderation=run.held,
            ),
            result_type=WebSearchResult,
            **search_call_options(run.settings.web_search_call, task_queue=run.settings.mcp_task_queue),
        )
    except ActivityError as error:
        return await failed(error, run, call, index)
    told = ToolResult(parked_in=call.id) if result.parked else ToolResult(text=result.text)
    return Ran(result.call, told, result.sources, checked=result)
