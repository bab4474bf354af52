"""What the server sends besides a response's logged events: `error` (a message refused; the
connection stays open) and the `response.steer.*` events, in openai-python's shapes."""

from __future__ import annotations

from typing import Any

import orjson

from models.errors import ApiError

Event = dict[str, Any]


def error_event(error: ApiError, stream_id: str | None = None) -> Event:
    """A refused message, as HTTP would have answered it (`status` is its HTTP status)."""
    body = error.to_body()["error"]
    headers = error.headers()
    if headers:
        body["headers"] = headers
    return _on_lane({"type": "error", "status": error.status_code, "error": body}, stream_id)


def steer_accepted(steer_id: str, target: str, stream_id: str | None) -> Event:
    return _on_lane(
        {"type": "response.steer.accepted", "steer": {"id": steer_id, "previous_response_id": target}}, stream_id
    )


def steer_pending(steer_id: str, target: str, required_input: list[dict[str, str]], stream_id: str | None) -> Event:
    return _on_lane(
        {
            "type": "response.steer.pending",
            "reason": "waiting_for_required_input",
            "required_input": required_input,
            "steer": {"id": steer_id, "previous_response_id": target},
        },
        stream_id,
    )


def steer_failed(
    code: str, message: str, target: str, given: Any, *, steer_id: str | None = None, stream_id: str | None = None
) -> Event:
    steer: dict[str, Any] = {"previous_response_id": target, "input": given}
    if steer_id is not None:
        steer["id"] = steer_id
    return _on_lane(
        {
            "type": "response.steer.failed",
            "error": {"type": "invalid_request_error", "code": code, "message": message},
            "steer": steer,
        },
        stream_id,
    )


def on_lane(logged: str, stream_id: str | None) -> str:
    """A logged event's JSON text with its lane's `stream_id` (spliced in: no parse)."""
    if stream_id is None:
        return logged
    return '{"stream_id":' + orjson.dumps(stream_id).decode() + "," + logged[1:]


def _on_lane(event: Event, stream_id: str | None) -> Event:
    return event if stream_id is None else event | {"stream_id": stream_id}
