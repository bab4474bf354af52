"""A `response.create` on a lane: checked and kept as `POST /v1/responses` with `stream: true`
is (the same admission, key limits and capacity check), then its events followed to its end
and on through any successor its steers made (`websocket_mode/steering.py`)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from access.quotas import Quotas
from http_plumbing.sse import logged_batches
from models.errors import ApiError
from response_service.admission import Admission
from response_service.preparation import PreparedResponse, prepared_for
from response_service.starting import kept_and_launched, ready_to_stream
from telemetry import metrics
from websocket_mode.client_events import CreateEvent
from websocket_mode.connection import Connection, Lane
from websocket_mode.server_events import error_event, on_lane
from websocket_mode.steering import after_end


async def respond(connection: Connection, event: CreateEvent, lane: Lane) -> None:
    arrived = time.perf_counter()
    state = connection.websocket.app.state
    admission: Admission = state.admission
    quotas: Quotas = state.quotas
    key = connection.acting.limit_key
    async with AsyncExitStack() as held:
        try:
            admission.enter()
            held.callback(admission.leave)
            quotas.enter(key)
            held.callback(quotas.leave, key)
            quotas.open_stream(key)
            held.callback(quotas.close_stream, key)
            prepared = await _prepared(connection, event)
            if event.generate:
                await state.capacity.check(prepared.response.model)
            launched = await kept_and_launched(connection.websocket, prepared, connection.acting)
            await ready_to_stream(connection.websocket, prepared, launched)
        except ApiError as error:  # refused before anything was kept: the lane goes on
            await connection.send(error_event(error, lane.stream_id))
            return
        response = prepared.response
        following: str | None = response.id
        try:
            while following is not None:
                connection.lane_of[following] = lane.stream_id
                if not response.store:
                    await connection.held.hold(following)
                await _follow(connection, following, lane, arrived, response.model, launched.launch.sent_first)
                following = await after_end(connection, following, lane)
        finally:
            launched.launch.sent_first()  # the start yields to it (response_service/runner.py)


async def _prepared(connection: Connection, event: CreateEvent) -> PreparedResponse:
    """The response as `prepare` makes it, with the input the steers of the response it
    continues left pending put first (committed to it when it is kept)."""
    payload: dict[str, Any] = dict(event.payload)
    previous = payload.get("previous_response_id")
    steers = connection.repository.steers
    project = connection.acting.project  # another project's response has no steers for this one to read
    pending = await steers.of_response(previous, "pending", project=project) if isinstance(previous, str) else []
    if pending:
        given = payload.get("input", [])
        given = [{"type": "message", "role": "user", "content": given}] if isinstance(given, str) else given
        if isinstance(given, list):
            payload["input"] = [item for steer in pending for item in steer.input_items()] + given
    prepared = await prepared_for(
        connection.websocket,
        connection.acting,
        payload,
        windows=connection.websocket.app.state.windows,
        held=connection.held.ids(),
    )
    response = prepared.response
    response.generate = event.generate
    response.held_by_connection = not response.store
    return dataclasses.replace(prepared, commits=[steer.id for steer in pending]) if pending else prepared


async def _follow(
    connection: Connection,
    response_id: str,
    lane: Lane,
    arrived: float,
    model: str,
    sent_first: Callable[[], None],
) -> None:
    """Send the response's events on its lane, calling `sent_first` after each read's events
    (`Launch.sent_first` heeds the first, those the stream began with, and no later one)."""
    waiting_for_delta = True
    async for batch in logged_batches(connection.repository, response_id, after=-1):
        for logged in batch:
            if waiting_for_delta and logged.type == "response.output_text.delta":
                metrics.first_delta_seen(arrived, model)
                waiting_for_delta = False
            await connection.send_text(on_lane(logged.data, lane.stream_id))
        sent_first()
