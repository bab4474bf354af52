"""`POST /v1/moderations` in OpenAI's shape, classified by a moderation model of the registry
(`guardrails/moderator.py`): a models-file entry with `model_info.mode: moderation` (OpenAI's
`/moderations`, or Llama Guard on a chat backend), or OpenAI's moderation names on a backend
that serves any name (the demo's keyword classifier in `dev`)."""

from __future__ import annotations

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.responses import Response as HttpResponse
from starlette.routing import Route

from guardrails.moderator import ModerationError, Moderator, Subject
from http_plumbing.body import read_json
from http_plumbing.errors import from_validation_error
from http_plumbing.params import limits, principal
from models.errors import BadGatewayError, InvalidRequestError, UnavailableError
from models.ids import new_id
from models.moderation import CreateModeration, TextPart


def subjects_of(body: CreateModeration) -> list[Subject]:
    if isinstance(body.input, str):
        return [Subject(body.input)]
    if all(isinstance(each, str) for each in body.input):
        return [Subject(str(each)) for each in body.input]
    parts = [each for each in body.input if not isinstance(each, str)]
    text = "\n".join(part.text for part in parts if isinstance(part, TextPart))
    return [Subject(text, tuple(part.image_url.url for part in parts if not isinstance(part, TextPart)))]


async def create_moderation(request: Request) -> HttpResponse:
    payload = await read_json(request, limits(request))
    try:
        body = CreateModeration.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error, payload) from None
    moderator: Moderator = request.app.state.moderator
    if not moderator.knows(body.model):
        raise InvalidRequestError(
            f"Invalid 'model': {body.model[:80]!r} is not a moderation model of this server.",
            param="model",
            code="invalid_value",
        )
    try:
        results = await moderator.classify(body.model, subjects_of(body), principal(request).project)
    except ModerationError as error:
        raise (UnavailableError if error.retryable else BadGatewayError)(
            error.message, code="moderation_failed"
        ) from None
    return JSONResponse(
        {"id": new_id("modr"), "model": body.model, "results": [result.to_wire() for result in results]}
    )


def moderation_routes() -> list[Route]:
    return [Route("/v1/moderations", create_moderation, methods=["POST"])]
