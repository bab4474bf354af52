"""Approvals in the API: every way a decision on an MCP approval request comes in.

- **In a new response** (`response_service/approvals.py`, part of preparing it): each
  `mcp_approval_response` item must answer an open request of the previous response (or the
  conversation, or one passed back in `input`), once; decisions kept for its requests in the
  inbox are applied; its other unanswered requests are closed.
- **`POST /v1/responses/{id}/approvals`** (`decide_approval`): a background response that waits
  gets the decision as a Temporal update and goes on in place; a request an ended response
  left open is kept for the follow-up that continues it.
- **`GET /v1/approvals?status=pending`** (`list_approvals`): the MCP calls waiting for a
  decision in the project, oldest first, each with what a person needs to decide it: the
  server and tool, the arguments, the response's model, the last thing its user asked, since
  when it waits, and when a decision takes effect (`decision_applies`): `now` for a background
  response that waits, `on_follow_up` for a request an ended response left open, which the
  client's next request continuing that response runs or refuses as decided. The inbox page
  (`inbox/`) is built on this route and the decide route alone. An approver key may list them
  (they are what it exists to decide).

Their rows are `store/approvals.py`'s; the workflow's side is `workflows/tool_steps.py`
(the wait) and `ResponseWorkflow.decide_approval` (the update).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response as HttpResponse

from http_plumbing.body import read_json
from http_plumbing.errors import from_validation_error
from http_plumbing.params import json_response, limits, list_page, plausible_id, principal
from http_plumbing.params import repository as repository_of
from models.errors import ConflictError, InvalidRequestError
from models.responses import Response
from models.workflow_io import ApprovalBody, ApprovalUpdate
from response_service.lookup import stored_response, with_progress
from store.approvals import Approvals
from store.event_log import EventLog
from store.responses import Responses
from telemetry import metrics

STATUSES = ("pending",)
MAX_LIMIT = 100
LAST_MESSAGE_CHARACTERS = 2000
INPUT_ITEMS_LOOKED_AT = 20


async def list_approvals(request: Request) -> HttpResponse:
    query = request.query_params
    status = query.get("status", "pending")
    if status not in STATUSES:
        raise InvalidRequestError(f"Invalid 'status': expected one of {', '.join(STATUSES)}.", param="status")
    try:
        limit = int(query.get("limit", str(MAX_LIMIT)))
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidRequestError(f"Invalid 'limit': expected an integer from 1 to {MAX_LIMIT}.", param="limit")
    repository = repository_of(request)
    project = principal(request).project
    after = query.get("after")
    cursor = None
    if after is not None:
        cursor = await _cursor(repository.approvals, project, after)
    rows = await repository.approvals.page(project, after=cursor, limit=limit + 1)
    data = []
    responses: dict[str, Response | None] = {}  # a response is read once, however many requests it has
    asked: dict[str, str | None] = {}
    for pending in rows[:limit]:
        request_id, response_id, asked_at = pending.request_id, pending.response_id, pending.asked_at
        if response_id not in responses:
            stored = await repository.responses.get(response_id, project=project)
            responses[response_id] = None if stored is None else await with_progress(repository.events, stored)
            asked[response_id] = None if stored is None else await _last_user_message(repository.responses, response_id)
        response = responses[response_id]
        item = _request_item(response, request_id) if response is not None else None
        if response is None or item is None:
            continue  # ended or not yet shown: the next look has it right
        data.append(
            {
                "id": request_id,
                "object": "approval_request",
                "status": "pending",
                "response_id": response_id,
                "response_status": response.status,
                "decision_applies": pending.applies,
                "server_label": item["server_label"],
                "name": item["name"],
                "arguments": item["arguments"],
                "model": response.model,
                "last_user_message": asked[response_id],
                "created_at": asked_at // 1_000_000,
                "asked_at_ms": asked_at // 1000,
            }
        )
    return list_page(data, len(rows) > limit)


async def _cursor(approvals: Approvals, project: str, after: str) -> tuple[int, str]:
    cursor = await approvals.cursor(project, after) if plausible_id(after) else None
    if cursor is None:
        raise InvalidRequestError(f"No pending approval request with id '{after}'.", param="after")
    return cursor


def _request_item(response: Response, request_id: str) -> dict[str, Any] | None:
    for item in response.output:
        if item.type == "mcp_approval_request" and item.id == request_id:
            return item.model_dump(mode="json")
    return None


async def _last_user_message(responses: Responses, response_id: str) -> str | None:
    page = await responses.input_items_page(
        response_id, after=None, before=None, limit=INPUT_ITEMS_LOOKED_AT, order="desc"
    )
    for item in page.data:
        if item.get("type", "message") == "message" and item.get("role") == "user":
            content = item.get("content")
            text = (
                content
                if isinstance(content, str)
                else " ".join(part.get("text", "") for part in content or [] if isinstance(part, dict))
            )
            return text[:LAST_MESSAGE_CHARACTERS] or None
    return None


# ---- a decision, by the route -------------------------------------------------------------


def parse_approval(payload: dict[str, Any], decided_by: str | None) -> ApprovalUpdate:
    """The body of `POST /v1/responses/{id}/approvals`, decided by the key `decided_by`."""
    try:
        body = ApprovalBody.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error, payload) from None
    return ApprovalUpdate(**body.model_dump(), decided_by=decided_by)


async def decide_approval(request: Request) -> HttpResponse:
    """Approve or deny an MCP call a background response waits for; answers the response as
    it stands once the decision is in. A request an ended response left open is decided for
    the follow-up that continues the response (`store/approvals.py`)."""
    response = await stored_response(request, request.path_params["response_id"])
    decision = parse_approval(await read_json(request, limits(request)), principal(request).key_id)
    repository = repository_of(request)
    if response.is_terminal or not response.background:
        return await _kept_for_follow_up(repository.approvals, repository.events, response, decision)
    shown = await with_progress(repository.events, response)
    if not any(
        item.type == "mcp_approval_request" and item.id == decision.approval_request_id for item in shown.output
    ):
        # Only a request the response has shown reaches the workflow, which waits for it
        # to be asked (a worker still replaying may not have come back to the wait).
        raise InvalidRequestError(
            f"Response with id '{response.id}' has no approval request with id '{decision.approval_request_id}'.",
            param="approval_request_id",
            code="invalid_value",
        )
    await request.app.state.runner.decide(response.id, decision)
    waited = await repository.approvals.decide(
        decision.approval_request_id, response.id, decision.approve, decided_by=decision.decided_by
    )
    metrics.approval_decided(decision.approve, waited)
    # As it stands now (for an approver too, though it may already have moved on).
    current = await repository.responses.get(response.id) or response
    return json_response(await with_progress(repository.events, current))


async def _kept_for_follow_up(
    approvals: Approvals, events: EventLog, response: Response, decision: ApprovalUpdate
) -> HttpResponse:
    """A decision on a request the ended response left open: kept, and applied by the follow-up
    that continues the response without answering the request itself."""
    if not response.is_terminal:  # requests open only when a response ends
        raise ConflictError(
            f"Response with id '{response.id}' is not a background response: only those wait for approvals. "
            "Answer its approval requests in a new response (`previous_response_id` and an "
            "`mcp_approval_response` item), or decide them here once it has ended.",
            param="response_id",
        )
    waited = await approvals.keep(
        response.id,
        decision.approval_request_id,
        approve=decision.approve,
        reason=decision.reason,
        decided_by=decision.decided_by,
    )
    if waited is None:
        raise ConflictError(
            f"Response with id '{response.id}' is {response.status} and waits for no approval of "
            f"'{decision.approval_request_id}': it was answered, a new response continuing it closed it, or "
            "the response never asked it.",
            param="approval_request_id",
        )
    metrics.approval_decided(decision.approve, waited)
    return json_response(await with_progress(events, response))
