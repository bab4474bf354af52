"""`ResponseState` is kept only where Temporal's own status cannot tell it
(`models/visibility.state_is_kept`): walks through the state machine's table, as the workflow
keeps the search attribute along them, and the histories recorded before and after the rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from models.visibility import ENDS, UNTOLD_ENDS, WAITING_STATES, state_is_kept
from tests.support.histories import HISTORIES, STATE_SET_AT_START
from workflows.machine import TERMINAL, TRANSITIONS, ResponseMachine, State

PASSING = {State.LISTING_TOOLS.value, State.INFERRING.value}


def _legal(state: State) -> list[str]:
    """The triggers the table allows from `state`."""
    found = []
    for transition in TRANSITIONS:
        source = transition["source"]
        if state == source or (isinstance(source, list) and state in source):
            found.append(transition["trigger"])
    return sorted(set(found))


def _walk(data: st.DataObject, kept: str | None) -> tuple[list[str], str | None, list[str]]:
    """A path through the machine to an end, drawn from the table (a long one is failed, which
    any live state allows): the states it entered, what `ResponseState` holds at its end
    (starting from `kept`), and every value written."""
    machine = ResponseMachine()
    entered: list[str] = []
    written: list[str] = []
    while not machine.is_terminal:
        before = machine.state
        machine.fire("fail" if len(entered) >= 30 else data.draw(st.sampled_from(_legal(machine.state))))
        if machine.state != before:
            entered.append(machine.state.value)
            if state_is_kept(machine.state.value, kept):
                kept = machine.state.value
                written.append(kept)
    return entered, kept, written


@given(st.data())
def test_a_response_keeps_what_temporal_cannot_tell_and_never_says_it_still_waits(data: st.DataObject) -> None:
    entered, kept, written = _walk(data, None)
    end = entered[-1]
    assert not PASSING & set(written), written  # a moment is never written
    waited = bool(WAITING_STATES & set(entered))
    if waited or end in UNTOLD_ENDS:
        assert kept == end, (entered, kept)  # how it ended, never a wait that is over
    else:
        assert kept is None and written == [], (entered, written)  # Temporal's status says it
    # Each wait is written as it begins: an operator finds every waiting response.
    assert [state for state in written if state in WAITING_STATES] == [
        state for state in entered if state in WAITING_STATES
    ]


@given(st.data())
def test_a_run_started_with_the_state_set_keeps_every_state_it_kept_before(data: st.DataObject) -> None:
    """A run whose start set `ResponseState` (`created`, by an API server before the rule)
    writes what it wrote before: every state but the passing ones. Its history replays."""
    entered, kept, written = _walk(data, "created")
    assert written == [state for state in entered if state not in PASSING]
    assert kept == entered[-1]


def test_the_ends_are_the_machines_terminal_states() -> None:
    assert {state.value for state in TERMINAL} == ENDS
    assert WAITING_STATES <= {state.value for state in State} and UNTOLD_ENDS <= ENDS


def _events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(path.read_text())["events"]
    return events


def _started_with(path: Path) -> set[str]:
    started = _events(path)[0]["workflowExecutionStartedEventAttributes"]
    return set((started.get("searchAttributes") or {}).get("indexedFields", {}))


def _upserts(path: Path) -> int:
    return sum(1 for event in _events(path) if event["eventType"].endswith("UPSERT_WORKFLOW_SEARCH_ATTRIBUTES"))


def test_paths_recorded_with_the_state_at_start_are_recorded_again_without_it() -> None:
    """Both kinds of run replay (`tests/stack/test_replay.py`): the recording from before the
    rule, and its path's recording since, which sets no state and writes none."""
    kept = sorted(STATE_SET_AT_START.glob("*.json"))
    assert kept, "the histories recorded with the state set at start are missing"
    for path in kept:
        assert "ResponseState" in _started_with(path) and _upserts(path) == 1, path.name
        again = HISTORIES / path.name
        assert again.exists(), f"{path.name}: no new recording of its path"
        assert "ResponseState" not in _started_with(again) and _upserts(again) == 0, path.name
