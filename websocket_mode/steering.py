"""The connection's side of steering (`models/steering.py`): take a `response.steer`, and
tell the client what became of each steer when its response stops.

A steer is checked (`invalid_input`), kept in the store (which takes it only while its
response runs), then signalled to the response's workflow; only then is
`response.steer.accepted` sent: the server owns the input. When the response's terminal
event has been sent, its steers are decided (the workflow decides them before it writes
its end): the lane follows their successor, whose `response.created` commits them, or sends
`response.steer.pending` (the client owes tool results or approvals) or
`response.steer.failed` (the response failed or was cancelled, or stopped before it took the
steer).
"""

from __future__ import annotations

from access.egress import EgressPolicy
from models.errors import ApiError
from models.ids import new_id
from models.steering import MAX_PENDING_STEERS
from response_service.preparation import user_input
from websocket_mode.client_events import SteerEvent
from websocket_mode.connection import Connection, Lane
from websocket_mode.server_events import steer_accepted, steer_failed, steer_pending

FAILED_BECAUSE = {
    "completed": ("response_already_completed", "The response completed and takes no more steering input."),
    "incomplete": ("response_already_completed", "The response has stopped and takes no more steering input."),
}
NOT_ACTIVE = ("response_not_active", "The response is no longer running and takes no steering input.")


async def steer(connection: Connection, event: SteerEvent) -> None:
    target, given = event.previous_response_id, event.input
    if target not in connection.lane_of:
        await connection.send(
            steer_failed("response_not_found", f"No response with id '{target}' on this connection.", target, given)
        )
        return
    stream_id = connection.lane_of[target]

    async def failed(code: str, message: str, steer_id: str | None = None) -> None:
        if steer_id is not None:
            connection.told.add(steer_id)
        await connection.send(steer_failed(code, message, target, given, steer_id=steer_id, stream_id=stream_id))

    egress: EgressPolicy = connection.websocket.app.state.egress
    try:
        items = await user_input(given, egress)
    except ApiError as error:
        await failed("invalid_input", error.message)
        return
    repository = connection.repository
    response = await repository.responses.get(target, include_unstored=True, project=connection.acting.project)
    if response is None:
        await failed("response_not_found", f"No response with id '{target}'.")
        return
    if response.conversation is not None or response.context_management:
        await failed(
            "steering_not_supported",
            "A response bound to a conversation or that compacts its context cannot be steered.",
        )
        return
    steer_id = new_id("steer")
    kept = await repository.steers.add(steer_id, target, connection.acting.project, items, most=MAX_PENDING_STEERS)
    if kept == "full":
        await failed("too_many_pending_steers", f"The response holds {MAX_PENDING_STEERS} steers already.")
        return
    if kept == "not_running":
        ended = await repository.responses.get(target, include_unstored=True)
        await failed(*FAILED_BECAUSE.get(ended.status if ended else "", NOT_ACTIVE))
        return
    try:
        signalled = await connection.runner.steer(target, steer_id)
    except ApiError as error:  # Temporal is unreachable: the steer must not apply later
        await repository.steers.mark([steer_id], "failed", error_code="response_not_active")
        await failed("response_not_active", error.message, steer_id)
        return
    if not signalled:  # the workflow has ended since: its end settled the steer, one way or the other
        settled = await repository.steers.some([steer_id])
        if not settled or settled[0].status == "failed":
            await failed((settled[0].error_code if settled else None) or NOT_ACTIVE[0], NOT_ACTIVE[1], steer_id)
            return
    await connection.send(steer_accepted(steer_id, target, stream_id))


async def after_end(connection: Connection, response_id: str, lane: Lane) -> str | None:
    """Once a response's terminal event is sent: what became of its steers, told; the
    successor they made, if any, for the lane to follow."""
    successor = None
    async with connection.steer_order:  # a steer being taken now is answered first
        steers = await connection.repository.steers.of_response(response_id)
    for kept in steers:
        if kept.id in connection.told:
            continue
        connection.told.add(kept.id)
        target, given = kept.response_id, kept.input_items()
        match kept.status:
            case "committed":
                successor = kept.successor_id
            case "pending":
                await connection.send(steer_pending(kept.id, target, kept.required_input or [], lane.stream_id))
            case "failed" | "queued":  # its response failed or was cancelled (settled with its end)
                await connection.send(
                    steer_failed(
                        kept.error_code or NOT_ACTIVE[0],
                        NOT_ACTIVE[1],
                        target,
                        given,
                        steer_id=kept.id,
                        stream_id=lane.stream_id,
                    )
                )
    return successor
