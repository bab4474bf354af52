"""The door: every JSON request body is read here, once, before any model sees it.

What a model cannot check is checked here, each refusal a 4xx in OpenAI's shape that names
the parameter:

- the content type is JSON (`application/json`, any charset parameter);
- the body is at most `Limits.max_request_bytes`, refused as soon as it is known to be larger
  (from `content-length`, or while it arrives), so a huge body is never held in memory, and
  it arrives whole within `Limits.body_timeout_seconds` (408 otherwise: a client that sends
  slowly, or stops halfway, does not hold a request open);
- it is valid JSON (orjson: valid UTF-8, no lone surrogates — a lone surrogate can be
  neither stored nor sent upstream) of at most `Limits.max_json_depth` levels;
- no string holds a NUL (PostgreSQL cannot store one; no backend expects one).
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError
from starlette.requests import Request

from models import history_budget
from models.errors import InvalidRequestError, PayloadTooLargeError, RequestTimeoutError

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class Limits:
    """What the door lets in; `serve` and `dev` read them from the environment."""

    max_request_bytes: int = 16 * 1024 * 1024
    max_json_depth: int = 64
    max_output_tokens: int = 1_000_000
    max_workflow_input_bytes: int = history_budget.MAX_WORKFLOW_INPUT_BYTES
    body_timeout_seconds: float = 30.0


async def read_json(request: Request, limits: Limits, *, most: int | None = None) -> dict[str, Any]:
    """The body as a JSON object, or a refusal; `most`: a route's own bound, below
    `MAX_REQUEST_BYTES` (parsing 16 MiB of JSON holds the event loop for tens of milliseconds:
    a route whose bodies are small by nature takes no such body)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise InvalidRequestError(
            f"Request bodies must be JSON: send `Content-Type: application/json` (got {content_type or 'none'!r}).",
            code="invalid_content_type",
        )
    bound = min(limits.max_request_bytes, most or limits.max_request_bytes)
    return parse_json(await read_bounded(request, bound, limits.body_timeout_seconds, _too_large(bound)), limits)


async def read_bounded(request: Request, max_bytes: int, timeout_seconds: float, too_large: Exception) -> bytes:
    """The whole body, refused with `too_large` as soon as it is known to be longer than
    `max_bytes`, and with a 408 when it has not arrived within `timeout_seconds`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise too_large
    chunks: list[bytes] = []
    try:
        async with asyncio.timeout(timeout_seconds):
            size = 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise too_large
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeoutError(
            f"The request body did not arrive within {timeout_seconds:g} s.",
            code="request_timeout",
        ) from None
    return b"".join(chunks)


async def read_model(model: type[ModelT], request: Request, limits: Limits, *, most: int | None = None) -> ModelT:
    """The body as `model`, or a 400 naming the parameter that is wrong (`most`: as `read_json`)."""
    from http_plumbing.errors import from_validation_error

    payload = await read_json(request, limits, most=most)
    try:
        return model.model_validate(payload)
    except ValidationError as error:
        raise from_validation_error(error, payload) from None


def parse_json(body: bytes, limits: Limits) -> dict[str, Any]:
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise _why_not_json(body, limits.max_json_depth) from None
    if not isinstance(payload, dict):
        raise InvalidRequestError("The request body must be a JSON object.", code="invalid_json")
    # A NUL can only be in a string as the escape `\u0000`: without one, no string is looked at.
    check_values(payload, limits.max_json_depth, nuls=b"\\u0000" in body)
    return payload


def check_values(payload: Any, max_depth: int, *, nuls: bool = True) -> None:
    """Refuse NULs in strings (when `nuls` says there may be some) and nesting deeper than
    `max_depth`, naming where (iteratively: a deep document cannot exhaust the stack). Only
    arrays and objects are walked, and an array of numbers is passed over at C speed: a body
    of two million numbers costs milliseconds, not the half second a step per value took."""
    stack: list[tuple[Any, Where, int]] = [(payload, None, 0)]
    while stack:
        value, where, depth = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value)
        if not value:
            continue
        if depth + 1 > max_depth:
            first = next(iter(items))[0]
            raise InvalidRequestError(
                f"Invalid '{_path((where, first))}': JSON nested deeper than {max_depth} levels.",
                param=_path((where, first)),
                code="invalid_value",
            )
        if isinstance(value, list) and not (set(map(type, value)) & ({dict, list, str} if nuls else {dict, list})):
            continue  # numbers, booleans, nulls (and, without NULs, strings): nothing to look into
        for key, item in items:
            if nuls and isinstance(key, str) and "\x00" in key:
                raise InvalidRequestError(
                    f"Invalid '{_path(where) or 'body'}': keys may not contain NUL characters.",
                    param=_path(where) or None,
                    code="invalid_value",
                )
            if isinstance(item, (dict, list)):
                stack.append((item, (where, key), depth + 1))
            elif nuls and isinstance(item, str) and "\x00" in item:
                raise InvalidRequestError(
                    f"Invalid '{_path((where, key))}': strings may not contain NUL characters.",
                    param=_path((where, key)) or None,
                    code="invalid_value",
                )


Where = tuple[Any, str | int] | None
"""Where a value is: (where its container is, its key or index), or None for the body itself."""


def _path(where: Where) -> str:
    """`input[0].content`, as OpenAI names a parameter."""
    parts: list[str | int] = []
    while where is not None:
        where, key = where
        parts.append(key)
    text = ""
    for part in reversed(parts):
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _why_not_json(body: bytes, max_depth: int) -> InvalidRequestError:
    """orjson refused the body: either it is not JSON, or a string in it cannot be encoded
    (a lone surrogate, which Python's parser accepts, so it can say where)."""
    try:
        lenient = json.loads(body)
    except (ValueError, RecursionError):
        return InvalidRequestError(
            "We could not parse the JSON body of your request: send valid JSON, in UTF-8, nested at most "
            f"{max_depth} levels.",
            code="invalid_json",
        )
    path, number = _first_unencodable(lenient)
    if number:  # NaN or Infinity: Python's parser takes them, JSON has no such number
        return InvalidRequestError(
            f"Invalid '{path or 'body'}': NaN and Infinity are not JSON numbers.",
            param=path or None,
            code="invalid_value",
        )
    return InvalidRequestError(
        f"Invalid '{path or 'body'}': the string contains a lone surrogate (\\ud800-\\udfff) that is not valid "
        "Unicode text.",
        param=path or None,
        code="invalid_value",
    )


def _first_unencodable(payload: Any) -> tuple[str, bool]:
    """Where the first value orjson cannot take is, and whether it is a number (NaN, Infinity)
    rather than a string with a lone surrogate."""
    stack: list[tuple[Any, str]] = [(payload, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str) and not _encodable(value):
            return path, False
        if isinstance(value, float) and not math.isfinite(value):
            return path, True
        if isinstance(value, dict):
            for key, item in value.items():
                if not _encodable(key):
                    return path, False
                stack.append((item, f"{path}.{key}" if path else key))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))
    return "", False


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _too_large(bound: int) -> PayloadTooLargeError:
    shown = f"{bound // (1024 * 1024)} MiB" if bound >= 1024 * 1024 else f"{bound // 1024} KiB"
    return PayloadTooLargeError(
        f"The request body is larger than this server takes here ({shown}; MAX_REQUEST_BYTES bounds every route).",
        code="request_too_large",
    )
