"""A response's side of steering (`models/steering.py`), for `ResponseWorkflow`.

The `steer` signal brings a steer the store already keeps (its id only: the input stays in
the store, out of history); the response stops at its next safe boundary (`turn.next_step`).
When it has stopped, `resolve` decides the steers' fate in one store step, before the
response's end is written (so whoever sees that end finds them decided): a successor made
from them when the response completed or stopped for them, or kept `pending` while the
client owes tool results or approvals. The successor starts once the end is written
(`start_successor`); if that start is lost, the orphan sweep starts it.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.steering import (
        MAX_PENDING_STEERS,
        ResolveSteersInput,
        ResolveSteersResult,
        StartSuccessorInput,
        StartSuccessorResult,
        SteerSignal,
        required_input,
    )
    from workflows import patches
    from workflows.options import local_activity_options
    from workflows.response_state import ResponseState

SUCCESSOR_STATUSES = frozenset({"completed", "incomplete"})
"""How a response may end for its steers to go on in a successor (one that failed or was
cancelled fails them: the client is told so)."""


def take_steer(state: ResponseState, signal: SteerSignal) -> None:
    """Take a steer, unless the response has stopped or holds as many as it may: one not
    taken stays `queued` in the store, and the connection that waits for the response's end
    reports it failed."""
    if signal.steer_id in state.steers or state.steering_closed or state.machine.is_terminal:
        return
    if len(state.steers) < MAX_PENDING_STEERS:
        state.steers.append(signal.steer_id)


async def resolve(state: ResponseState) -> str | None:
    """Close the response to steering and decide its steers; the successor's id, if one was made."""
    state.steering_closed = True
    if not state.steers or state.machine.response_status not in SUCCESSOR_STATUSES:
        return None
    if not workflow.patched(patches.STEERING):
        return None
    try:
        resolved: ResolveSteersResult = await workflow.execute_local_activity(
            activity_names.RESOLVE_STEERS,
            ResolveSteersInput(
                response_id=state.response.id,
                steer_ids=list(state.steers),
                successor_id=f"resp_{workflow.uuid4().hex}{workflow.uuid4().hex[:16]}",
                required_input=required_input(state.response.output, decided={*state.decisions, *state.answered}),
                project=state.project,
            ),
            result_type=ResolveSteersResult,
            **local_activity_options(state.settings.store),
        )
    except ActivityError as error:  # the steers stay queued: whoever waits for them hears they failed
        workflow.logger.warning("could not resolve the steers of %s: %s", state.response.id, error.cause)
        return None
    return resolved.successor_id


async def start_successor(state: ResponseState, successor_id: str) -> None:
    try:
        await workflow.execute_local_activity(
            activity_names.START_SUCCESSOR,
            StartSuccessorInput(successor_id=successor_id, project=state.project),
            result_type=StartSuccessorResult,
            **local_activity_options(state.settings.store),
        )
    except ActivityError as error:  # kept, never started: the orphan sweep starts it
        workflow.logger.warning("could not start %s, the successor of %s: %s", successor_id, state.response.id, error)
