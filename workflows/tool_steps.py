"""The tool steps of `ResponseWorkflow`: list the MCP servers' tools, turn approvals into
calls, run calls (MCP, and hosted tools': `workflows/hosted_calls.py`) within
`max_tool_calls`, and wait for approvals.

A mixin of the workflow class (the same instance, the same state): the workflow's loop
decides when; this module does. Activities are addressed by name.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import (
        CallMcpToolInput,
        CallMcpToolResult,
        CheckedToolResult,
        RecordApprovalWaitInput,
        RecordApprovalWaitResult,
    )
    from models.errors import ResponseFailedError
    from models.events import StreamEvent, mcp_call_closing
    from models.history_budget import ToolResult
    from models.hosted_tools import BY_ITEM_TYPE
    from models.items import McpApprovalRequestItem, McpCallItem, McpHttpError
    from models.mcp import ApprovalDecision, McpListing
    from models.moderation import ModerationPlan
    from models.tools import McpTool
    from models.webhooks import action_required_event
    from workflows import moderation, patches
    from workflows.failures import call_failure, is_cancel_request
    from workflows.hosted_calls import HostedCall
    from workflows.hosted_runners import RUNNERS
    from workflows.mcp_listing import list_server
    from workflows.options import local_activity_options, tool_call_options
    from workflows.response_state import ResponseState
    from workflows.turn import within_max_tool_calls
    from workflows.webhooks import send_webhooks


class ToolSteps:
    """Steps of the workflow: they act on its state."""

    state: ResponseState
    _emit: Callable[[list[StreamEvent]], Awaitable[None]]

    async def _list_tools(self, known: list[McpListing]) -> None:
        """Servers the chain listed at the same URL keep that listing; the rest are listed now,
        in parallel, each as an `mcp_list_tools` item."""
        response = self.state.response
        reusable = {listing.item.server_label: listing for listing in known}
        self.state.listings = [listing for listing in known if listing.item.server_label not in self.state.servers]
        to_list: list[McpTool] = []
        for label, tool in self.state.servers.items():
            listing = reusable.get(label)
            if listing is not None and listing.server_url == tool.server_url:
                self.state.listings.append(listing)
            else:
                to_list.append(tool)
        offset = len(response.output)
        listed = await asyncio.gather(
            *(
                list_server(
                    response.id,
                    tool,
                    offset + position,
                    settings=self.state.settings,
                    emit_events=self.state.emit_events,
                    emit=self._emit,
                    project=self.state.project,
                    moderation=self._held(),
                )
                for position, tool in enumerate(to_list)
            )
        )
        items = [item for item, _, _ in listed]
        self.state.parked.update({item.id: item.id for item, parked, _ in listed if parked})
        for _, _, checked in listed:
            if checked is not None:
                self._checked(checked)
        response.output.extend(items)
        self.state.listings.extend(
            McpListing(server_url=tool.server_url or "", item=item)
            for tool, item in zip(to_list, items, strict=True)
            if item.error is None
        )
        failed = [item for item in items if item.error is not None]
        if failed:
            raise ResponseFailedError("; ".join(item.error or "" for item in failed))

    def _apply(self, decisions: list[ApprovalDecision]) -> list[int]:
        """Approved requests become calls (appended to the output, returned by index); refused
        or unanswered ones become what the model is told instead of a result."""
        response = self.state.response
        approved: list[int] = []
        for decision in decisions:
            self.state.decisions[decision.request.id] = decision
            if not decision.approve:
                self.state.tool_results[decision.request.id] = ToolResult(text=decision.refusal_text())
                continue
            request = decision.request
            call_id = f"mcp_{workflow.uuid4().hex}"
            response.output.append(
                McpCallItem(
                    id=call_id,
                    server_label=request.server_label,
                    name=request.name,
                    arguments=request.arguments,
                    approval_request_id=request.id,
                    status="in_progress",
                )
            )
            if request.id in self.state.parked:
                self.state.parked[call_id] = self.state.parked[request.id]
            approved.append(len(response.output) - 1)
        return approved

    async def _run_calls(self, indexes: list[int]) -> None:
        indexes = self._within_max_tool_calls(indexes)
        follow_at = self._follow_indexes(indexes)
        follows: dict[int, Any] = {}
        if self.state.response.parallel_tool_calls:
            await asyncio.gather(*(self._run_call(index, follow_at.get(index), follows) for index in indexes))
        else:
            for index in indexes:
                await self._run_call(index, follow_at.get(index), follows)
        self.state.response.output.extend(follows[at] for at in sorted(follows))

    def _follow_indexes(self, indexes: list[int]) -> dict[int, int]:
        """Where the item that follows each call with its results goes (a `shell_call_output`):
        after the turn's items, in the calls' order, whatever order they end in."""
        output = self.state.response.output
        followed = [index for index in indexes if _output_item_type(output[index]) is not None]
        return {index: len(output) + position for position, index in enumerate(followed)}

    def _within_max_tool_calls(self, indexes: list[int]) -> list[int]:
        """Calls beyond `max_tool_calls` are not run; the model is told so."""
        response = self.state.response
        allowed, refused = within_max_tool_calls(response.output, indexes, response.max_tool_calls)
        for index in refused:
            # Only server calls count against `max_tool_calls` (`within_max_tool_calls`): an MCP
            # call or a hosted tool's, each with a `status` and a `chat_call_id`.
            call: Any = response.output[index]
            response.output[index] = call.model_copy(update={"status": "incomplete"})
            self.state.tool_results[call.chat_call_id] = ToolResult(
                text=f"The call was not run: this response may make at most {response.max_tool_calls} tool calls."
            )
        return allowed

    async def _run_call(self, index: int, follow_index: int | None, follows: dict[int, Any]) -> None:
        response = self.state.response
        call = response.output[index]
        if call.type in RUNNERS:
            await self._run_hosted(call, index, follow_index, follows)
            return
        assert isinstance(call, McpCallItem)
        # Every call names a server of this request: the model's calls come from its listings,
        # and the API refuses an approval for a server missing from `tools`.
        finished, parked = await self._call(call, self.state.servers[call.server_label], index)
        response.output[index] = finished
        if parked:
            self.state.parked[finished.id] = finished.id
            self.state.tool_results[finished.chat_call_id] = ToolResult(parked_in=finished.id)
        else:
            self.state.tool_results[finished.chat_call_id] = ToolResult(text=finished.result_text())

    async def _call(self, call: McpCallItem, tool: McpTool, index: int) -> tuple[McpCallItem, bool]:
        """The call as it ended, and whether it travels as a stub (its fields parked); what the
        check of its result found is kept (`_checked`)."""
        # A cancel waits for a running call to stop (it watches the store's cancel record), so
        # no call starts after the client has its cancelled response.
        wait_for_cancel = patches.taken(patches.TOOL_CALLS_END_BEFORE_A_CANCEL_IS_ANSWERED)
        try:
            result = await workflow.execute_activity(
                activity_names.CALL_MCP_TOOL,
                CallMcpToolInput(
                    response_id=self.state.response.id,
                    server_url=tool.server_url or "",
                    call=call,
                    output_index=index,
                    emit_events=self.state.emit_events,
                    arguments_parked_in=self.state.parked.get(call.id),
                    repeatable=self._repeatable(call),
                    project=self.state.project,
                    moderation=self._held(),
                ),
                result_type=CallMcpToolResult,
                **tool_call_options(
                    self.state.settings.mcp_call,
                    self.state.settings.mcp_heartbeat_seconds,
                    wait_for_cancel=wait_for_cancel,
                    task_queue=self.state.settings.mcp_task_queue,
                ),
            )
            self._checked(result)
            return result.call, result.parked
        except ActivityError as error:
            if is_cancelled_exception(error) or is_cancel_request(error):
                raise
            code, message = call_failure(error, call, self.state.settings.mcp_heartbeat_seconds)
            finished = call.model_copy(update={"status": "failed", "error": McpHttpError(code=code, message=message)})
            await self._emit(mcp_call_closing(finished, index))
            return finished, False

    async def _run_hosted(self, call: Any, index: int, follow_index: int | None, follows: dict[int, Any]) -> None:
        """A hosted tool's call (`workflows/hosted_calls.py`); what it cites is numbered on from
        what the response cited before; the item that follows it, if its tool has one, goes
        where `follow_index` says."""
        run = HostedCall(
            response=self.state.response,
            project=self.state.project,
            settings=self.state.settings,
            emit_events=self.state.emit_events,
            first_number=sum(source.number > 0 for source in self.state.sources) + 1,  # a written file is not numbered
            emit=self._emit,
            follow_index=follow_index,
        )
        ran = await RUNNERS[call.type](run, call, index)
        if ran.checked is not None:
            self._checked(ran.checked)
        self.state.response.output[index] = ran.call
        if follow_index is not None and ran.follows is not None:
            follows[follow_index] = ran.follows
        if ran.parked:  # its fields wait in the store, under its id
            self.state.parked[call.id] = call.id
        self.state.sources.extend(ran.sources)
        self.state.tool_results[call.chat_call_id] = ran.told

    def _held(self) -> ModerationPlan | None:
        """The response's plan, when it holds its output: tools' outputs are checked too."""
        plan = self.state.response.moderation_plan
        return plan if plan is not None and plan.holds_output else None

    def _checked(self, result: CheckedToolResult) -> None:
        """Keep what the check of a tool's output found; one that blocked ends the response
        once the turn's calls are done (`tools_blocked`)."""
        if result.moderation is not None and moderation.output_checked(
            self.state.response, result.moderation, result.blocked
        ):
            self.state.tools_blocked = True

    def _repeatable(self, call: McpCallItem) -> bool:
        """Whether the tool's listing says running the call twice is harmless."""
        for listing in self.state.listings:
            if listing.item.server_label == call.server_label:
                return any(tool.name == call.name and tool.repeatable for tool in listing.item.tools)
        return False

    async def _await_approval(self, requests: tuple[McpApprovalRequestItem, ...]) -> bool:
        """Wait for a decision on every request; False when the wait timed out."""
        if patches.taken(patches.APPROVAL_WAITS_RECORDED):  # before the wait: a decision finds its row
            await workflow.execute_local_activity(
                activity_names.RECORD_APPROVAL_WAIT,
                RecordApprovalWaitInput(
                    response_id=self.state.response.id, approval_request_ids=[request.id for request in requests]
                ),
                result_type=RecordApprovalWaitResult,
                **local_activity_options(self.state.settings.store),
            )
        self.state.awaited.update({request.id: request for request in requests})
        self.state.machine.fire("request_approval")
        response = self.state.response
        await send_webhooks(
            self.state.settings.webhooks,
            self.state.settings.webhook_task_queue,
            response,
            lambda event_id, now: [
                action_required_event(f"{event_id}{index}", response.id, request.id, now)
                for index, request in enumerate(requests)
            ],
            self.state.settings.store,
        )
        try:
            await workflow.wait_condition(
                lambda: all(request.id in self.state.decisions for request in requests),
                timeout=timedelta(seconds=self.state.settings.approval_timeout_seconds),
            )
        except TimeoutError:
            return False
        return True


def _output_item_type(call: Any) -> str | None:
    hosted = BY_ITEM_TYPE.get(call.type)
    return hosted.output_item_type if hosted is not None else None
