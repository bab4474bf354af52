"""A response's search attributes are written once it is more than a request answered
(`models/visibility.search_attributes_on`), and `ResponseState` then only where Temporal's own
status cannot tell it (`state_is_kept`): walks through the state machine's table, as the
workflow keeps the attributes along them, and the histories recorded before and after each rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from models.visibility import (
    ENDS,
    QUIET_END,
    UNTOLD_ENDS,
    WAITING_STATES,
    search_attributes_on,
)
from tests.support.histories import HISTORIES, MODEL_SET_AT_START, STATE_SET_AT_START
from workflows.machine import TERMINAL, TRANSITIONS, ResponseMachine, State

PASSING = {State.LISTING_TOOLS.value, State.INFERRING.value}
MODEL = "some-model"


def _legal(state: State) -> list[str]:
    """The triggers the table allows from `state`."""
    found = []
    for transition in TRANSITIONS:
        source = transition["source"]
        if state == source or (isinstance(source, list) and state in source):
            found.append(transition["trigger"])
    return sorted(set(found))


def _walk(
    data: st.DataObject, at_start: dict[str, str], previous: str | None = None
) -> tuple[list[str], dict[str, str], list[dict[str, str]]]:
    """A path through the machine to an end, drawn from the table (a long one is failed, which
    any live state allows): the states it entered, the search attributes it holds at its end
    (starting from `at_start`), and each upsert it made."""
    machine = ResponseMachine()
    entered: list[str] = []
    present = dict(at_start)
    upserts: list[dict[str, str]] = []
    while not machine.is_terminal:
        before = machine.state
        machine.fire("fail" if len(entered) >= 30 else data.draw(st.sampled_from(_legal(machine.state))))
        if machine.state != before:
            entered.append(machine.state.value)
            updates = search_attributes_on(
                machine.state.value,
                kept=present.get("ResponseState"),
                described="ResponseModel" in present,
                model=MODEL,
                previous_response_id=previous,
            )
            if updates:
                upsert = {update.key.name: str(update.value) for update in updates}
                present |= upsert
                upserts.append(upsert)
    return entered, present, upserts


@given(st.data(), st.sampled_from([None, "resp_before"]))
def test_a_response_is_described_once_it_is_more_than_a_request_answered(
    data: st.DataObject, previous: str | None
) -> None:
    entered, present, upserts = _walk(data, {}, previous)
    end = entered[-1]
    written = [upsert["ResponseState"] for upsert in upserts]
    assert not PASSING & set(written), written  # a moment is never written
    waited = bool(WAITING_STATES & set(entered))
    if not waited and end == QUIET_END:
        assert upserts == [] and present == {}, (entered, upserts)  # its status says it all
        return
    # Described in full by its first upsert, and never again.
    assert upserts[0].keys() - {"ResponseState"} == {"ResponseModel"} | ({"PreviousResponseId"} if previous else set())
    assert all(upsert.keys() == {"ResponseState"} for upsert in upserts[1:]), upserts
    assert present["ResponseModel"] == MODEL and present.get("PreviousResponseId") == previous
    assert present["ResponseState"] == end, (entered, present)  # how it ended, never a wait that is over
    # Each wait is written as it begins: an operator finds every waiting response.
    assert [state for state in written if state in WAITING_STATES] == [
        state for state in entered if state in WAITING_STATES
    ]


@given(st.data())
def test_a_run_started_with_the_model_set_keeps_what_temporal_cannot_tell(data: st.DataObject) -> None:
    """A run whose start set `ResponseModel` (by an API server before the rule) writes what it
    wrote then: `ResponseState` only, where Temporal's own status cannot tell it. Its history
    replays."""
    entered, present, upserts = _walk(data, {"ResponseModel": MODEL})
    end = entered[-1]
    assert all(upsert.keys() == {"ResponseState"} for upsert in upserts), upserts
    written = [upsert["ResponseState"] for upsert in upserts]
    assert not PASSING & set(written), written
    if WAITING_STATES & set(entered) or end in UNTOLD_ENDS:
        assert present["ResponseState"] == end, (entered, present)
    else:
        assert written == [], (entered, written)


@given(st.data())
def test_a_run_started_with_the_state_set_keeps_every_state_it_kept_before(data: st.DataObject) -> None:
    """A run whose start set `ResponseState` (`created`, by an API server before both rules)
    writes what it wrote before: every state but the passing ones. Its history replays."""
    entered, present, upserts = _walk(data, {"ResponseModel": MODEL, "ResponseState": "created"})
    assert [upsert["ResponseState"] for upsert in upserts] == [state for state in entered if state not in PASSING]
    assert present["ResponseState"] == entered[-1]


def test_the_ends_are_the_machines_terminal_states() -> None:
    assert {state.value for state in TERMINAL} == ENDS
    assert WAITING_STATES <= {state.value for state in State} and UNTOLD_ENDS <= ENDS and QUIET_END in ENDS


def _events(path: Path) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = json.loads(path.read_text())["events"]
    return events


def _started_with(path: Path) -> set[str]:
    started = _events(path)[0]["workflowExecutionStartedEventAttributes"]
    return set((started.get("searchAttributes") or {}).get("indexedFields", {}))


def _upserted(path: Path) -> list[set[str]]:
    """The search attributes each upsert of the history wrote."""
    return [
        set(event["upsertWorkflowSearchAttributesEventAttributes"]["searchAttributes"]["indexedFields"])
        for event in _events(path)
        if event["eventType"].endswith("UPSERT_WORKFLOW_SEARCH_ATTRIBUTES")
    ]


def _upserts(path: Path) -> int:
    return len(_upserted(path))


def test_paths_recorded_with_the_state_at_start_are_recorded_again_without_it() -> None:
    """Every kind of run replays (`tests/stack/test_replay.py`): the recordings from before the
    state rule, and their paths' recordings since, which set no state at start."""
    kept = sorted(STATE_SET_AT_START.glob("*.json"))
    assert kept, "the histories recorded with the state set at start are missing"
    for path in kept:
        assert "ResponseState" in _started_with(path) and _upserts(path) == 1, path.name
        again = MODEL_SET_AT_START / path.name
        assert again.exists(), f"{path.name}: no recording under the state rule"
        assert _started_with(again) == {"ResponseModel"}, path.name


QUIET_PATHS = {"text", "streamed", "mcp_approval_requested"}
"""Recorded paths that go straight from their request to their answer (one that asks for an
approval ends `completed` with the request in its output)."""


def test_paths_recorded_with_the_model_at_start_are_recorded_again_with_nothing_at_start() -> None:
    """The recordings from when every start set `ResponseModel`, and their paths' recordings
    since: nothing at start; a plain answer writes nothing, any other path first an upsert
    that describes it, then its state alone."""
    kept = sorted(MODEL_SET_AT_START.glob("*.json"))
    assert {path.stem for path in kept} >= QUIET_PATHS and len(kept) > len(QUIET_PATHS), kept
    for path in kept:
        assert "ResponseModel" in _started_with(path), path.name
        again = HISTORIES / path.name
        assert again.exists(), f"{path.name}: no recording of its path under the rule"
        assert _started_with(again) == set(), path.name
        upserted = _upserted(again)
        if path.stem in QUIET_PATHS:
            assert upserted == [], path.name
        else:
            assert upserted and {"ResponseState", "ResponseModel"} <= upserted[0], path.name
            assert all(later == {"ResponseState"} for later in upserted[1:]), path.name
