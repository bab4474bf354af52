"""What route handlers share: the app's parts, and the paging parameters of list routes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse

from access.principal import OPEN, Principal
from http_plumbing.body import Limits
from models.errors import InvalidRequestError
from models.quotas import ProjectQuotas
from models.responses import WIRE
from store.repository import ResponseRepository


def repository(request: HTTPConnection) -> ResponseRepository:
    found: ResponseRepository = request.app.state.repository
    return found


def principal(request: HTTPConnection) -> Principal:
    """Who the request acts for (set by `http_plumbing.access_middleware`)."""
    found: Principal = request.scope.get("state", {}).get("principal", OPEN)
    return found


def at_end(request: HTTPConnection, release: Callable[[], None]) -> None:
    """Run `release` when the request's ASGI call ends, however it ends (a stream included)."""
    request.scope["state"]["at_end"].append(release)


def limits(request: HTTPConnection) -> Limits:
    found: Limits = request.app.state.limits
    return found


def project_quotas(request: HTTPConnection) -> ProjectQuotas:
    """What the request's project may keep (`access/quotas.py`)."""
    found: ProjectQuotas = request.app.state.quotas.settings.project
    return found


def json_response(model: BaseModel, status_code: int = 200) -> HttpResponse:
    """A model as clients see it (`WIRE`: effective values filled in)."""
    return HttpResponse(
        model.model_dump_json(by_alias=True, context=WIRE), status_code=status_code, media_type="application/json"
    )


def list_page(data: list[dict[str, Any]], has_more: bool) -> HttpResponse:
    """A page of a cursor-paged list, as OpenAI's list routes answer: every list of this API
    is written here. An empty page's `first_id` and `last_id` are `""`: the SDK types some
    lists' as a string (input items, conversation items), the others' as optional."""
    return JSONResponse(
        {
            "object": "list",
            "data": data,
            "first_id": data[0]["id"] if data else "",
            "last_id": data[-1]["id"] if data else "",
            "has_more": has_more,
        }
    )


def plausible_id(value: str) -> bool:
    """Whether a path's id could name anything here: ids never hold control characters and
    are short, so anything else is not found without asking the store."""
    return 0 < len(value) <= 255 and value.isprintable()


@dataclass(frozen=True)
class PageParams:
    after: str | None
    before: str | None
    limit: int
    order: Literal["asc", "desc"]


def page_params(
    request: Request, *, with_before: bool = False, default_order: Literal["asc", "desc"] = "desc"
) -> PageParams:
    query = request.query_params
    try:
        limit = int(query.get("limit", "20"))
    except ValueError:
        raise InvalidRequestError("Invalid 'limit': expected an integer from 1 to 100.", param="limit") from None
    if not 1 <= limit <= 100:
        raise InvalidRequestError("Invalid 'limit': expected an integer from 1 to 100.", param="limit")
    match query.get("order", default_order):
        case "asc":
            order: Literal["asc", "desc"] = "asc"
        case "desc":
            order = "desc"
        case _:
            raise InvalidRequestError("Invalid 'order': expected 'asc' or 'desc'.", param="order")
    after, before = query.get("after"), query.get("before") if with_before else None
    for name, cursor in (("after", after), ("before", before)):
        if cursor is not None and not plausible_id(cursor):
            raise InvalidRequestError(f"Invalid '{name}': expected an item id.", param=name)
    return PageParams(after, before, limit, order)
