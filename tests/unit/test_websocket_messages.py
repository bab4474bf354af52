"""A WebSocket client's messages are parsed as request bodies are: whatever a message holds,
it becomes a `response.create` or `response.steer`, or is refused with an `InvalidRequestError`
that names a parameter (sent as an `error` event; the connection stays open)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from http_plumbing.body import Limits
from models.errors import InvalidRequestError
from websocket_mode.client_events import ClientEventError, CreateEvent, SteerEvent, parse
from websocket_mode.server_events import error_event, on_lane

LIMITS = Limits()
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
FIELDS = st.sampled_from(
    [
        "type",
        "model",
        "input",
        "stream_id",
        "generate",
        "background",
        "stream",
        "previous_response_id",
        "store",
        "tools",
    ]
)
TYPES = st.sampled_from(["response.create", "response.steer", "response.cancel", "", None])


@settings(max_examples=400, deadline=None)
@given(kind=TYPES, fields=st.dictionaries(FIELDS, JSON, max_size=6))
def test_any_message_is_an_event_or_a_refusal_that_names_a_parameter(kind, fields):
    message = {**fields, **({"type": kind} if kind is not None else {})}
    try:
        event = parse(json.dumps(message), LIMITS)
    except InvalidRequestError as refused:
        assert refused.param, refused.message
        wire = error_event(refused, refused.stream_id if isinstance(refused, ClientEventError) else None)
        assert wire["type"] == "error" and wire["status"] == 400 and wire["error"]["param"] == refused.param
        return
    assert isinstance(event, (CreateEvent, SteerEvent))
    if isinstance(event, CreateEvent):
        assert event.payload["stream"] is True and "type" not in event.payload and "stream_id" not in event.payload


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_bytes_that_are_not_an_object_are_refused(message):
    try:
        parse(message, LIMITS)
    except InvalidRequestError:
        return
    assert json.loads(message)["type"] in ("response.create", "response.steer")


@given(stream_id=st.text(min_size=1, max_size=128))
def test_a_lane_is_spliced_into_a_logged_event_as_valid_json(stream_id):
    logged = json.dumps({"type": "response.output_text.delta", "delta": "x", "sequence_number": 3})
    assert json.loads(on_lane(logged, stream_id)) == json.loads(logged) | {"stream_id": stream_id}
