"""The messages a client sends: `response.create` and `response.steer`, parsed and checked
as HTTP's bodies are (`http_plumbing/body.py`), or refused naming the parameter."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from http_plumbing.body import Limits, parse_json
from models.errors import InvalidRequestError

MAX_STREAM_ID_CHARACTERS = 128
STEER_FIELDS = frozenset({"type", "previous_response_id", "input"})


@dataclass(frozen=True)
class CreateEvent:
    payload: dict[str, Any]
    """The body of a `POST /v1/responses` (streamed)."""
    stream_id: str | None
    generate: bool


@dataclass(frozen=True)
class SteerEvent:
    previous_response_id: str
    input: Any


ClientEvent = CreateEvent | SteerEvent


class ClientEventError(InvalidRequestError):
    """A message refused; `stream_id` is its lane's when it named one."""

    def __init__(self, error: InvalidRequestError, stream_id: str | None = None) -> None:
        super().__init__(error.message, param=error.param, code=error.code)
        self.stream_id = stream_id


def parse(message: str | bytes, limits: Limits) -> ClientEvent:
    body = message.encode() if isinstance(message, str) else message
    event = parse_json(body, limits)
    match event.pop("type", None):
        case "response.create":
            stream_id = event.pop("stream_id", None)
            try:
                return _create(event, _stream_id(stream_id))
            except InvalidRequestError as error:
                raise ClientEventError(error, stream_id if isinstance(stream_id, str) else None) from None
        case "response.steer":
            return _steer(event)
        case None:
            raise InvalidRequestError(
                "Missing required parameter: 'type'.", param="type", code="missing_required_parameter"
            )
        case other:
            raise InvalidRequestError(
                f"Invalid value: '{str(other)[:64]}'. Supported values for 'type' are: 'response.create', "
                "'response.steer'.",
                param="type",
                code="invalid_value",
            )


def _stream_id(given: Any) -> str | None:
    if given is None:
        return None
    if not isinstance(given, str) or not 0 < len(given) <= MAX_STREAM_ID_CHARACTERS:
        raise InvalidRequestError(
            f"Invalid 'stream_id': expected a string of 1 to {MAX_STREAM_ID_CHARACTERS} characters.",
            param="stream_id",
            code="invalid_value",
        )
    return given


def _create(event: dict[str, Any], stream_id: str | None) -> CreateEvent:
    generate = event.pop("generate", True)
    if not isinstance(generate, bool):
        raise InvalidRequestError("Invalid 'generate': expected a boolean.", param="generate", code="invalid_type")
    if event.pop("background", None):
        raise InvalidRequestError(
            "Unsupported parameter: 'background': background mode is not supported over WebSocket; "
            "use POST /v1/responses.",
            param="background",
            code="unsupported_parameter",
        )
    if event.pop("stream", True) is not True:
        raise InvalidRequestError(
            "Invalid 'stream': every response over WebSocket streams; leave it out.",
            param="stream",
            code="invalid_value",
        )
    return CreateEvent(payload=event | {"stream": True}, stream_id=stream_id, generate=generate)


def _steer(event: dict[str, Any]) -> SteerEvent:
    if extra := sorted(set(event) - STEER_FIELDS):
        param = str(extra[0])[:64]
        raise InvalidRequestError(f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter")
    target = event.get("previous_response_id")
    if not isinstance(target, str) or not target:
        raise InvalidRequestError(
            "Missing required parameter: 'previous_response_id'.",
            param="previous_response_id",
            code="missing_required_parameter",
        )
    if "input" not in event:
        raise InvalidRequestError(
            "Missing required parameter: 'input'.", param="input", code="missing_required_parameter"
        )
    return SteerEvent(previous_response_id=target, input=event["input"])
