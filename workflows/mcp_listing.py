"""Listing one MCP server's tools for a response: the `list_mcp_tools` local activity, and
the `mcp_list_tools` item it ends with (with the error, when the server could not be listed;
the response then fails, naming it)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import CheckedToolResult, ListMcpToolsInput, ListMcpToolsResult
    from models.events import StreamEvent, list_tools_closing
    from models.items import McpListToolsItem
    from models.moderation import ModerationPlan
    from models.tools import McpTool
    from models.workflow_io import ExecutionSettings
    from workflows.failures import application_failure
    from workflows.options import local_activity_options


async def list_server(
    response_id: str,
    tool: McpTool,
    index: int,
    *,
    settings: ExecutionSettings,
    emit_events: bool,
    emit: Callable[[list[StreamEvent]], Awaitable[None]],
    project: str = "",
    moderation: ModerationPlan | None = None,
) -> tuple[McpListToolsItem, bool, CheckedToolResult | None]:
    """The listing, whether it travels as a stub (its tools' schemas parked), and what the
    check of its tools found (`moderation`: the response's plan when it holds its output)."""
    item_id = f"mcpl_{workflow.uuid4().hex}"
    try:
        result = await workflow.execute_local_activity(
            activity_names.LIST_MCP_TOOLS,
            ListMcpToolsInput(
                response_id=response_id,
                tool=tool,
                item_id=item_id,
                output_index=index,
                emit_events=emit_events,
                project=project,
                moderation=moderation,
            ),
            result_type=ListMcpToolsResult,
            **local_activity_options(settings.mcp_list),
        )
        return result.item, result.parked, result
    except (ActivityError, ApplicationError) as error:
        if is_cancelled_exception(error):
            raise
        failure = application_failure(error)
        reason = failure.message if failure else str(error.cause or error)
        message = f"Error retrieving tool list from MCP server '{tool.server_label}': {reason}"
        item = McpListToolsItem(id=item_id, server_label=tool.server_label, error=message)
        await emit(list_tools_closing(item, index))
        return item, False, None
