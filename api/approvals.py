"""`GET /v1/approvals?status=pending`: the MCP calls waiting for a decision in the project,
oldest first, each with what a person needs to decide it: the server and tool, the arguments,
the response's model, the last thing its user asked, since when it waits, and when a decision
takes effect (`decision_applies`): `now` for a background response that waits, `on_follow_up`
for a request an ended response left open, which the client's next request continuing that
response runs or refuses as decided (`store/open_approvals.py`). The inbox page (`inbox/`) is
built on this route and the approvals route alone.

An approver key may list them (they are what it exists to decide).
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse

from api.params import plausible_id, principal
from api.params import repository as repository_of
from api.routes import with_progress
from models.errors import InvalidRequestError
from models.responses import Response
from store.repository import ResponseRepository

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
        cursor = await _cursor(repository, project, after)
    rows = await repository.pending_approvals.page(project, after=cursor, limit=limit + 1)
    data = []
    responses: dict[str, Response | None] = {}  # a response is read once, however many requests it has
    asked: dict[str, str | None] = {}
    for pending in rows[:limit]:
        request_id, response_id, asked_at = pending.request_id, pending.response_id, pending.asked_at
        if response_id not in responses:
            stored = await repository.get_response(response_id, project=project)
            responses[response_id] = None if stored is None else await with_progress(repository, stored)
            asked[response_id] = None if stored is None else await _last_user_message(repository, response_id)
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
    return JSONResponse(
        {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else "",
            "last_id": data[-1]["id"] if data else "",
            "has_more": len(rows) > limit,
        }
    )


async def _cursor(repository: ResponseRepository, project: str, after: str) -> tuple[int, str]:
    cursor = await repository.pending_approvals.cursor(project, after) if plausible_id(after) else None
    if cursor is None:
        raise InvalidRequestError(f"No pending approval request with id '{after}'.", param="after")
    return cursor


def _request_item(response: Response, request_id: str) -> dict[str, Any] | None:
    for item in response.output:
        if item.type == "mcp_approval_request" and item.id == request_id:
            return item.model_dump(mode="json")
    return None


async def _last_user_message(repository: ResponseRepository, response_id: str) -> str | None:
    page = await repository.list_input_items(
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
