"""Every error leaves the API in OpenAI's shape: {"error": {message, type, param, code}}."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import ValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket

from models.errors import ApiError, InvalidRequestError, StoreUnavailableError, UnavailableError
from models.unsupported import UnsupportedParameter

log = logging.getLogger(__name__)


def from_validation_error(error: ValidationError, payload: Any = None) -> InvalidRequestError:
    """The most specific problem (deepest location: for `str | list` fields that is the
    branch the client meant), located as OpenAI spells it (`input[0].content`). `payload`,
    the body that was validated, tells the tags of discriminated unions from field names."""
    first = max(error.errors(include_url=False), key=lambda problem: len(problem["loc"]))
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, UnsupportedParameter):
        return InvalidRequestError(
            f"Unsupported parameter: '{cause.param}': {cause.why}.", param=cause.param, code="unsupported_parameter"
        )
    param = _location(first["loc"], payload)
    match first["type"]:
        case "extra_forbidden":
            return InvalidRequestError(f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter")
        case "missing":
            return InvalidRequestError(
                f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter"
            )
        case "union_tag_invalid":
            tag = first.get("ctx", {}).get("tag")
            expected = first.get("ctx", {}).get("expected_tags")
            return InvalidRequestError(
                f"Invalid value: '{tag}'. Supported values for '{param}.type' are: {expected}.",
                param=f"{param}.type",
                code="invalid_value",
            )
    message = first["msg"].removeprefix("Value error, ")
    return InvalidRequestError(f"Invalid '{param}': {message}.", param=param or None, code="invalid_value")


def _location(location: tuple[int | str, ...], payload: Any) -> str:
    text = ""
    at = payload
    for index, part in enumerate(location):
        if isinstance(part, int):
            text += f"[{part}]"
            at = at[part] if isinstance(at, list) and part < len(at) else None
            continue
        following = location[index + 1] if index + 1 < len(location) else None
        if isinstance(at, dict) and at.get("type") == part and (part not in at or following in at):
            continue  # the tag of a discriminated union, not a field (also when a field has its name)
        if "[" in str(part) or "function-" in str(part) or part in ("str", "list") or str(part)[:1].isupper():
            continue  # pydantic's names for union members (a model's class name), not fields
        text += f".{part}" if text else str(part)
        at = at.get(part) if isinstance(at, dict) else None
    return text


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.to_body(), status_code=error.status_code, headers=error.headers())


async def refuse_upgrade(websocket: WebSocket, error: ApiError) -> None:
    """Answer a WebSocket upgrade with the error as HTTP would (OpenAI's shape); a server that
    cannot answer an upgrade so closes it with the message as the reason instead."""
    try:
        await websocket.send_denial_response(error_response(error))
    except RuntimeError:
        await websocket.close(1008, error.message[:120])


async def handle_api_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ApiError)
    return error_response(error)


async def handle_http_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    kind = "invalid_request_error" if error.status_code < 500 else "server_error"
    message = "Not found." if error.status_code == 404 else str(error.detail)
    return JSONResponse(
        {"error": {"message": message, "type": kind, "param": None, "code": None}}, status_code=error.status_code
    )


async def handle_unexpected(_request: Request, error: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=error)
    return JSONResponse(
        {
            "error": {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        },
        status_code=500,
    )


async def handle_store_unavailable(_request: Request, error: Exception) -> JSONResponse:
    log.warning("store unavailable: %s", error)
    return error_response(
        UnavailableError("The store is unavailable for a moment; retry the request.", code="store_unavailable")
    )


EXCEPTION_HANDLERS = {
    ApiError: handle_api_error,
    StoreUnavailableError: handle_store_unavailable,
    HTTPException: handle_http_error,
    Exception: handle_unexpected,
}
