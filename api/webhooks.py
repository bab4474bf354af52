"""Route handlers of OpenAI's webhook endpoint API (`/v1/webhook_endpoints`): a project's own
endpoints, which the official SDK's `client.webhooks.create/list/retrieve/update/delete/
rotate_secret/test` manage.

Each endpoint takes the response events it names. A background response sends its events to
the endpoints its project had when it was created, and to the operator's `WEBHOOK_URLS`.
URLs pass the egress guard when they are set, as MCP servers' do; the signing secret is shown
when it is made and never again. An approver key may not manage endpoints.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse

from access.egress import EgressPolicy, EgressRefusedError
from activities.webhooks import egress_refused, post_event
from http_plumbing.body import read_json
from http_plumbing.errors import from_validation_error
from http_plumbing.params import limits, list_page, page_params, plausible_id, principal, project_quotas, repository
from models.errors import InvalidRequestError, NotFoundError
from models.webhooks import (
    ACTION_REQUIRED,
    CreateWebhookEndpoint,
    RotateWebhookSecret,
    UpdateWebhookEndpoint,
    WebhookEvent,
    WebhookTestRequest,
)
from store.webhooks import WebhookEndpointRow, WebhookEndpoints

TEST_TIMEOUT_SECONDS = 10.0


async def _body(model: type[BaseModel], request: Request, *, empty_allowed: bool = False) -> Any:
    bodiless = request.headers.get("content-length") == "0" and "content-type" not in request.headers
    payload = {} if empty_allowed and bodiless else await read_json(request, limits(request))
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error, payload) from None


def _endpoints(request: Request) -> WebhookEndpoints:
    return repository(request).webhook_endpoints


async def _reachable(request: Request, url: str) -> None:
    egress: EgressPolicy = request.app.state.egress
    try:
        await egress.check_url(url)
    except EgressRefusedError:
        raise InvalidRequestError(
            "Invalid 'url': this server may not connect to that URL.", param="url", code="invalid_value"
        ) from None


async def _found(request: Request) -> WebhookEndpointRow:
    endpoint_id = request.path_params["webhook_endpoint_id"]
    found = (
        await _endpoints(request).get(principal(request).project, endpoint_id) if plausible_id(endpoint_id) else None
    )
    if found is None:
        raise _not_found(endpoint_id)
    return found


def _not_found(endpoint_id: str) -> NotFoundError:
    return NotFoundError(f"Webhook endpoint with id '{endpoint_id}' not found.", param="webhook_endpoint_id")


async def create_endpoint(request: Request) -> HttpResponse:
    body: CreateWebhookEndpoint = await _body(CreateWebhookEndpoint, request)
    await _reachable(request, body.url)
    endpoint, secret = await _endpoints(request).create(
        principal(request).project,
        name=body.name,
        url=body.url,
        event_types=list(body.event_types),
        quotas=project_quotas(request),
    )
    return JSONResponse(endpoint.to_wire(signing_secret=secret))


async def list_endpoints(request: Request) -> HttpResponse:
    page_at = page_params(request)  # newest first, as OpenAI lists them
    page = await _endpoints(request).page(principal(request).project, after=page_at.after, limit=page_at.limit)
    if page is None:
        raise InvalidRequestError(f"No webhook endpoint with id '{page_at.after}'.", param="after")
    rows, has_more = page
    return list_page([row.to_wire() for row in rows], has_more)


async def retrieve_endpoint(request: Request) -> HttpResponse:
    return JSONResponse((await _found(request)).to_wire())


async def update_endpoint(request: Request) -> HttpResponse:
    endpoint = await _found(request)
    body: UpdateWebhookEndpoint = await _body(UpdateWebhookEndpoint, request, empty_allowed=True)
    if body.url is not None:
        await _reachable(request, body.url)
    changes = body.model_dump(exclude_none=True)
    updated = await _endpoints(request).update(principal(request).project, endpoint.id, changes)
    if updated is None:
        raise _not_found(endpoint.id)
    return JSONResponse(updated.to_wire())


async def delete_endpoint(request: Request) -> HttpResponse:
    endpoint = await _found(request)
    await _endpoints(request).delete(principal(request).project, endpoint.id)
    return JSONResponse({"id": endpoint.id, "object": "webhook_endpoint.deleted", "deleted": True})


async def rotate_secret(request: Request) -> HttpResponse:
    endpoint = await _found(request)
    body: RotateWebhookSecret = await _body(RotateWebhookSecret, request, empty_allowed=True)
    rotated = await _endpoints(request).rotate_secret(
        principal(request).project, endpoint.id, keep_old=body.keep_old_secret_active_for_24_hours
    )
    if rotated is None:
        raise _not_found(endpoint.id)
    row, secret = rotated
    return JSONResponse(row.to_wire(signing_secret=secret))


async def test_endpoint(request: Request) -> HttpResponse:
    """Send a sample event, signed as a real one, and answer what the endpoint answered."""
    endpoint = await _found(request)
    body: WebhookTestRequest = await _body(WebhookTestRequest, request)
    signing = await _endpoints(request).signing(endpoint.id)
    if signing is None:
        raise _not_found(endpoint.id)
    data: dict[str, Any] = {"id": f"resp_test_{secrets.token_hex(8)}"}
    if body.event_type == ACTION_REQUIRED:
        data["required_action"] = {
            "type": "mcp_approval_request",
            "approval_request_id": f"mcpr_test_{secrets.token_hex(8)}",
        }
    event = WebhookEvent(
        id=f"evt_test_{secrets.token_hex(12)}", created_at=int(time.time()), type=body.event_type, data=data
    )
    try:
        status_code = await post_event(
            signing.url, signing.keys, event, egress=request.app.state.egress, timeout_seconds=TEST_TIMEOUT_SECONDS
        )
    except Exception as error:  # noqa: BLE001 - told as a 400 below, without the URL
        why = (
            "may not be reached from this server"
            if egress_refused(error)
            else f"could not be reached ({type(error).__name__})"
        )
        raise InvalidRequestError(
            f"Webhook endpoint '{endpoint.id}' {why}.", param="webhook_endpoint_id", code="webhook_unreachable"
        ) from None
    return JSONResponse(
        {
            "object": "webhook_endpoint.test",
            "event_type": body.event_type,
            "status_code": status_code,
            "success": True,
            "webhook_endpoint_id": endpoint.id,
        }
    )
