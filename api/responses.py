"""Route handlers of `/v1/responses`: create, retrieve (and resume a stream), cancel, delete,
list, and a response's input items."""

from __future__ import annotations

import logging
import time

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response as HttpResponse

from access.principal import Principal
from access.quotas import Quotas
from http_plumbing.body import read_json
from http_plumbing.event_stream import EventStream
from http_plumbing.params import at_end, limits, list_page, page_params, principal
from http_plumbing.params import json_response as _json
from http_plumbing.params import repository as _repository
from http_plumbing.sse import tail
from models.errors import ConflictError, InvalidRequestError
from models.responses import DeletedResponse, Response
from response_service.admission import Admission
from response_service.lookup import stored_response, with_progress
from response_service.preparation import PreparedResponse, prepared_for
from response_service.runner import ResponseRunner, Started
from response_service.starting import kept_and_launched, ready_to_stream, settled
from telemetry import metrics

log = logging.getLogger(__name__)


def _runner(request: HTTPConnection) -> ResponseRunner:
    found: ResponseRunner = request.app.state.runner
    return found


def _admission(request: Request) -> Admission:
    found: Admission = request.app.state.admission
    return found


def _quotas(request: Request) -> Quotas:
    found: Quotas = request.app.state.quotas
    return found


SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


async def create_response(request: Request) -> HttpResponse:
    """In flight (admission) until the request's call ends: a stream's end included."""
    arrived, arrived_ms = time.perf_counter(), int(time.time() * 1000)
    admission = _admission(request)
    admission.enter()
    at_end(request, admission.leave)
    acting = principal(request)
    prepared = await prepared_for(
        request, acting, await read_json(request, limits(request)), windows=request.app.state.windows
    )
    if not prepared.request.background:  # an interactive request that would wait too long is refused now
        await request.app.state.capacity.check(prepared.response.model)
    if prepared.request.stream:
        _open_stream(request)  # refused (429) before anything is kept
    return await _created(request, prepared, acting, arrived, arrived_ms)


def _open_stream(request: Request) -> None:
    key = principal(request).limit_key
    _quotas(request).open_stream(key)
    at_end(request, lambda: _quotas(request).close_stream(key))


async def _created(
    request: Request, prepared: PreparedResponse, acting: Principal, arrived: float, arrived_ms: int
) -> HttpResponse:
    repository, runner = _repository(request), _runner(request)
    response = prepared.response
    launched = await kept_and_launched(request, prepared, acting)
    if prepared.request.stream:
        events = metrics.first_delta_watch(
            tail(
                repository,
                response.id,
                after=-1,
                forget_at_end=None if response.store else runner.forget_unstored,
                live_since_ms=arrived_ms,
            ),
            arrived,
            response.model,
        )
        return EventStream(
            events,
            headers=SSE_HEADERS,
            ready=lambda: ready_to_stream(request, prepared, launched),
            sent_first=launched.launch.sent_first,
        )
    started = await settled(request, prepared, launched)
    if prepared.request.background:
        return _json(response)
    return _json(await ended(request, started, response))


async def ended(request: Request, started: Started, response: Response) -> Response:
    """The end of a response this request waits for (an unstored one is then forgotten)."""
    runner = _runner(request)
    end = await _admission(request).unless_closing(runner.ended(started), response.id, stored=response.store)
    if not response.store:
        await runner.forget_unstored(response.id)  # kept only until this request had it
    return end


def _event_stream(request: Request, response_id: str, *, after: int) -> EventStream:
    _open_stream(request)
    return EventStream(tail(_repository(request), response_id, after=after), headers=SSE_HEADERS)


async def retrieve_response(request: Request) -> HttpResponse:
    response = await stored_response(request, request.path_params["response_id"])
    if request.query_params.get("stream", "false").lower() != "true":
        return _json(await with_progress(_repository(request).events, response))
    try:
        after = int(request.query_params.get("starting_after", "-1"))
    except ValueError:
        after = None
    if after is None or not -1 <= after < 2**31:
        raise InvalidRequestError(
            "Invalid 'starting_after': expected an event's sequence number.", param="starting_after"
        )
    if not await _repository(request).events.has_events(response.id):
        raise InvalidRequestError(
            f"Response with id '{response.id}' has no event stream: only responses created with "
            "`stream: true` or `background: true` can be streamed.",
            param="stream",
        )
    return _event_stream(request, response.id, after=after)


async def delete_response(request: Request) -> HttpResponse:
    response = await stored_response(request, request.path_params["response_id"])
    if not response.is_terminal:
        raise ConflictError(
            f"Response with id '{response.id}' is {response.status}; cancel it before deleting it.",
            param="response_id",
        )
    await _runner(request).forget(response.id)
    return _json(DeletedResponse(id=response.id))


async def cancel_response(request: Request) -> HttpResponse:
    """Cancel an in-progress response of any kind; cancelling a cancelled one again is harmless."""
    response = await stored_response(request, request.path_params["response_id"])
    if response.status == "cancelled":
        return _json(response)
    if response.is_terminal:
        raise ConflictError(
            f"Response with id '{response.id}' is already {response.status}; only a queued or "
            "in-progress response can be cancelled.",
            param="response_id",
        )
    # The store record stops a running inference call at once; Temporal's cancel reaches the
    # workflow wherever else it waits (a retry backoff, a tool call, an approval).
    await _repository(request).cancels.request(response.id)
    runner = _runner(request)
    await runner.cancel(response.id)
    return _json(await runner.result(response.id))


async def list_input_items(request: Request) -> HttpResponse:
    response = await stored_response(request, request.path_params["response_id"])
    page_at = page_params(request, with_before=True)
    try:
        page = await _repository(request).responses.input_items_page(
            response.id, after=page_at.after, before=page_at.before, limit=page_at.limit, order=page_at.order
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No input item with id '{missing}' in this response.", param="after") from None
    return list_page(page.data, page.has_more)


async def list_responses(request: Request) -> HttpResponse:
    page_at = page_params(request)
    try:
        page = await _repository(request).responses.page(
            project=principal(request).project,
            after=page_at.after,
            limit=page_at.limit,
            order=page_at.order,
            previous_response_id=request.query_params.get("previous_response_id") or None,
        )
    except LookupError as missing:
        raise InvalidRequestError(f"No stored response with id '{missing}'.", param="after") from None
    return list_page(page.data, page.has_more)
