"""Approvals in a new response, part of preparing it (`response_service/preparation.py`):
each `mcp_approval_response` item must answer an open request of the previous response (or the
conversation, or one passed back in `input`), once; decisions kept for its requests in the
inbox are applied; its other unanswered requests are closed. The routes that decide and list
approvals are `api/approvals.py`'s."""

from __future__ import annotations

from typing import Any

from models.errors import ApprovalAlreadyAnsweredError, InvalidRequestError
from models.items import McpApprovalRequestItem
from models.mcp import ApprovalDecision
from models.requests import CreateResponseRequest
from models.responses import Response
from store.approvals import Approvals
from store.responses import Responses


async def _foreign_requests(
    items: list[Any], previous: Response | None, history: list[Any], project: str, responses: Responses
) -> set[str]:
    """Approval requests passed back in `input` that are not the client's to answer: a request
    this server stored for a response of another project, or stored with other content than
    what is passed back (an id borrowed for a call of the client's making). A request the
    server never stored (a stateless chain) is the client's own."""
    in_chain = {
        item.id
        for item in [*(previous.output if previous is not None else []), *history]
        if item.type == "mcp_approval_request"
    }
    passed_back = {item.id: item for item in items if item.type == "mcp_approval_request" and item.id not in in_chain}
    if not passed_back:
        return set()
    stored = await responses.stored_output_items(list(passed_back))
    return {
        request_id
        for request_id, (owner, data) in stored.items()
        if owner != project
        or any(
            data.get(field) != getattr(passed_back[request_id], field)
            for field in ("server_label", "name", "arguments")
        )
    }


async def answered_approvals(
    request: CreateResponseRequest,
    items: list[Any],
    previous: Response | None,
    approvals: Approvals,
    responses: Responses,
    history: list[Any],
    project: str,
    decided_by: str | None,
) -> tuple[list[ApprovalDecision], frozenset[str]]:
    """Each `mcp_approval_response` must answer an open approval request of the previous
    response (or of the conversation, or one passed back in `input`), once. A request of the
    previous response (or the conversation) left unanswered that was decided in the approvals
    inbox gets that decision, which is applied (the second value); the others of the previous
    response are closed: the model is told they were not run (a conversation's items tell it so
    themselves)."""
    requests: dict[str, McpApprovalRequestItem] = {}
    settled: set[str] = set()  # run or answered already, in the previous response itself
    for item in [*(previous.output if previous is not None else []), *history]:
        if item.type == "mcp_approval_request":
            requests[item.id] = item
        elif item.type == "mcp_call" and item.approval_request_id:
            settled.add(item.approval_request_id)
    from_previous = [
        item.id
        for item in (previous.output if previous is not None else [])
        if item.type == "mcp_approval_request" and item.id not in settled
    ]
    in_chain = [request_id for request_id in requests if request_id not in settled]
    requests.update({item.id: item for item in items if item.type == "mcp_approval_request"})
    answers = [(index, item) for index, item in enumerate(items) if item.type == "mcp_approval_response"]
    # A conversation keeps its unanswered requests: each turn looks only for decisions kept for
    # them, and reads the rest only when there is something to answer, apply or close.
    kept = await approvals.kept(in_chain) if in_chain else {}
    if not answers and not from_previous and not kept:
        return [], frozenset()
    answered_before = await approvals.answered(list(requests) + [item.approval_request_id for _, item in answers])
    foreign = await _foreign_requests(items, previous, history, project, responses)
    labels = {tool.server_label for tool in request.tools if tool.type == "mcp"}
    decisions: dict[str, ApprovalDecision] = {}
    for index, answer in answers:
        request_id = answer.approval_request_id
        param = f"input[{index}].approval_request_id"
        approval_request = requests.get(request_id) if request_id not in foreign else None
        if approval_request is None:  # unknown, or not the client's: said alike, before anything else
            raise InvalidRequestError(
                f"No MCP approval request with id '{request_id}' is open: answer a request of the previous "
                "response (`previous_response_id`), or pass the request back in `input`.",
                param=param,
                code="invalid_value",
            )
        if request_id in settled or request_id in answered_before or request_id in decisions:
            raise ApprovalAlreadyAnsweredError([request_id], decided_in_inbox=request_id in kept)
        _check_runnable(approval_request, answer.approve, labels)
        decisions[request_id] = ApprovalDecision(
            request=approval_request, approve=answer.approve, reason=answer.reason, decided_by=decided_by
        )
    for request_id, decision in kept.items():
        _check_runnable(requests[request_id], decision.approve, labels)
        decisions[request_id] = ApprovalDecision(
            request=requests[request_id],
            approve=decision.approve,
            reason=decision.reason,
            decided_by=decision.decided_by,
        )
    for request_id in from_previous:
        if request_id not in decisions and request_id not in answered_before:
            decisions[request_id] = ApprovalDecision(request=requests[request_id], approve=None)
    return list(decisions.values()), frozenset(kept)


def _check_runnable(approval_request: McpApprovalRequestItem, approve: bool, labels: set[str]) -> None:
    """An approved call runs with the MCP tool this request sends again (its credentials are
    never kept past the response that asked)."""
    if approve and approval_request.server_label not in labels:
        raise InvalidRequestError(
            f"Approval request '{approval_request.id}' is for MCP server '{approval_request.server_label}', which "
            "is not in `tools`: send that MCP tool again to run the approved call.",
            param="tools",
            code="invalid_value",
        )
