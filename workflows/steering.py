"""A response's side of steering (`models/steering.py`), for `ResponseWorkflow`.

The `steer` signal brings a steer the store already keeps (its id only: the input stays in
the store, out of history); the response stops at its next safe boundary (`turn.next_step`).
Its end settles the steers the store holds for it in the same transaction (`successor_id`,
in `workflows/response_end.py`'s `end_input`; `store/steers.py`): a successor made from
them, or kept `pending` while the client owes tool results or approvals, or failed. The
successor starts once the end is written (`start_successor`); if that start is lost, the
orphan sweep starts it.
"""

from __future__ import annotations

import hashlib

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.steering import (
        MAX_PENDING_STEERS,
        StartSuccessorInput,
        StartSuccessorResult,
        SteerSignal,
    )
    from workflows.options import local_activity_options
    from workflows.response_state import ResponseState

SUCCESSOR_STATUSES = frozenset({"completed", "incomplete"})
"""How a response may end for its steers to go on in a successor (one that failed or was
cancelled fails them: the client is told so)."""


def take_steer(state: ResponseState, signal: SteerSignal) -> None:
    """Take a steer (the response stops at its next safe boundary), unless it has stopped or
    holds as many as it may. Only the stop hangs on this: the response's end settles every
    steer the store holds, taken here or not."""
    if signal.steer_id in state.steers or state.machine.is_terminal:
        return
    if len(state.steers) < MAX_PENDING_STEERS:
        state.steers.append(signal.steer_id)


def successor_id(response_id: str) -> str:
    """The id of a response's successor, if it gets one (at most one: it has one end). Derived
    from its id, not drawn from the workflow's randomness, which later steps (webhook event
    ids) draw from as they did before steering existed."""
    return "resp_" + hashlib.sha256(f"{response_id}/successor".encode()).hexdigest()[:48]


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
