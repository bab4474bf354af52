"""`POST /v1/responses/compact` and `POST /v1/responses/input_tokens`.

Compacting is a model call like any other, so it runs as one: an unstored response whose one
turn summarises its context into a `compaction` item (durable, retried, paced as every call),
answered as OpenAI's `response.compaction` object. Its `output` is that one item: the newest
user message, kept word for word, is inside it. Counting renders the context as a response's
first turn would send it and estimates it (`context/tokens.py`); no model is called.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response as HttpResponse

from api.responses import ended
from http_plumbing.body import read_json
from http_plumbing.params import at_end, json_response, limits, principal
from http_plumbing.params import repository as _repository
from models.context import CompactedResponse, InputTokenCount
from models.errors import ApiError, InvalidRequestError, RateLimitedError
from models.ids import new_id
from models.items import CompactionItem
from models.responses import Response, Usage
from response_service.context_size import check_compactions, request_size
from response_service.preparation import history_of, prepared_for, resolved, validate
from response_service.starting import kept_and_started

COMPACT_PARAMETERS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "previous_response_id",
        "prompt_cache_key",
        "prompt_cache_retention",
        "prompt_cache_options",
        "service_tier",
        "image",
    }
)
COUNT_ADVISORY = ("personality",)
"""Parameters of `input_tokens` that change no count here."""


async def compact(request: Request) -> HttpResponse:
    payload = await read_json(request, limits(request))
    unknown = sorted(name for name in payload if name not in COMPACT_PARAMETERS)
    if unknown:
        raise InvalidRequestError(
            f"Unrecognized request argument supplied: {unknown[0]}", param=unknown[0], code="unknown_parameter"
        )
    if "model" not in payload:
        raise InvalidRequestError(
            "Missing required parameter: 'model'.", param="model", code="missing_required_parameter"
        )
    acting = principal(request)
    prepared = await prepared_for(request, acting, payload | {"store": False}, compact_only=True)
    response = prepared.response
    admission = request.app.state.admission
    admission.enter()
    at_end(request, admission.leave)
    await request.app.state.capacity.check(response.model)
    end = await ended(request, await kept_and_started(request, prepared, acting), response)
    items = [item for item in end.output if isinstance(item, CompactionItem)]
    if end.status != "completed" or not items:
        raise _failed(end)
    return json_response(
        CompactedResponse(id=new_id("cmp"), created_at=end.created_at, output=items, usage=end.usage or Usage())
    )


async def count_input_tokens(request: Request) -> HttpResponse:
    payload: dict[str, Any] = await read_json(request, limits(request))
    for name in COUNT_ADVISORY:
        payload.pop(name, None)
    payload.setdefault("model", "input-tokens")
    counted = validate(payload)
    acting = principal(request)
    repository = _repository(request)
    items = await resolved(counted.input_items(), repository.responses, acting.project)
    check_compactions(items, repository.secret_box, acting.project)
    _, known_context, known_items = await history_of(
        counted, repository.responses, repository.conversations, acting.project
    )
    response = Response.from_request("resp_count", int(time.time()), counted)
    tokens = request_size(response, known_context, known_items, items, repository.secret_box, acting.project)
    return json_response(InputTokenCount(input_tokens=tokens))


def _failed(end: Response) -> ApiError:
    error = end.error
    message = error.message if error else f"the compaction ended {end.status}"
    if error is not None and error.code == "rate_limit_exceeded":
        return RateLimitedError(message)
    failure = ApiError(message, code=error.code if error else "server_error")
    if error is not None and error.code == "context_length_exceeded":
        failure.status_code = 400
    return failure
