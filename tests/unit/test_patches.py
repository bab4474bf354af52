"""The patches and the recorded histories hold together (`workflows/patches.py`): every
patch id asked in `workflows/` is listed there, every listed one is used, every one stands in
at least one recorded history (by its marker or its memo), every history recorded since runs
carry a baseline in their memo carries one and holds no marker of what it folds, a path the
newer baseline changed keeps its recording under the first memo beside its new one, every one
recorded under the baseline's marker holds it and no folded one, and every workflow type the
worker runs has a recorded history to replay."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import temporalio.workflow

from tests.support.histories import (
    BEFORE_THE_BASELINE,
    HISTORIES,
    UNDER_THE_BASELINE_MARKER,
    UNDER_THE_FIRST_MEMO,
    baseline_in_memo,
    history_at,
    patches_recorded,
    recorded,
)
from workflows import patches

ROOT = Path(__file__).resolve().parents[2]
LISTED = {patch.id for patch in patches.PATCHES}
BASELINES = {patch.id for patch in patches.BASELINES}


def _used() -> set[str]:
    """The patch ids workflow code asks through `patches.taken`; only `workflows/patches.py`
    may call `workflow.patched` (for the baseline, and for the patch it is asked)."""
    constants = {name: value for name, value in vars(patches).items() if name.isupper() and isinstance(value, str)}
    used = set()
    for path in (ROOT / "workflows").glob("*.py"):
        text = path.read_text()
        for name in re.findall(r"patches\.taken\(patches\.([A-Z_0-9]+)\)", text):
            used.add(constants[name])
        literal = re.findall(r"(?:workflow\.(?:patched|deprecate_patch)|taken)\(\s*[\"']", text)
        assert not literal, f"{path.name}: a patch id written as a literal (use workflows/patches.py)"
        if path.name != "patches.py":
            assert "workflow.patched(" not in text, f"{path.name}: asks workflow.patched, not patches.taken"
    return used


def test_every_patch_used_is_listed_and_every_listed_one_is_used() -> None:
    assert _used() == LISTED


def test_each_baseline_folds_every_patch_before_it_and_new_runs_take_the_newest() -> None:
    listed = [patch.id for patch in patches.PATCHES]
    first_after = listed.index(patches.ENDS_IN_THE_CALL)
    assert patches.FOLDED == set(listed[:first_after])
    assert BASELINES == set(patches.FOLDED_BY_MEMO) == {patches.BASELINE_2026_11_27, patches.BASELINE_2026_11_27_2}
    assert patches.FOLDED_BY_MEMO[patches.BASELINE_2026_11_27] == patches.FOLDED
    assert patches.FOLDED_BY_MEMO[patches.BASELINE_2026_11_27_2] == set(listed)
    assert patches.start_memo() == {patches.BASELINE_MEMO: patches.BASELINE_2026_11_27_2}


STARTED_BY_US = {"ResponseWorkflow", "FileIngestion"}
"""The workflow types our code starts (with `patches.start_memo()`); a webhook delivery is a
child workflow, started only by runs from before the webhook outbox."""


def test_a_history_since_the_memo_carries_a_baseline_there_and_records_no_marker_it_folds() -> None:
    """A run that starts now records no patch marker, however many patches are in force."""
    since = {
        path: ids
        for path, ids in patches_recorded().items()
        if not {BEFORE_THE_BASELINE, UNDER_THE_BASELINE_MARKER} & set(path.parents)
    }
    assert since, "no history recorded since runs carry the baseline in their memo"
    started = [path for path in since if _workflow_type(path) in STARTED_BY_US]
    without = [path.name for path in started if baseline_in_memo(history_at(path)) not in patches.FOLDED_BY_MEMO]
    assert not without, f"histories since the memo whose run's memo carries no baseline: {without}"
    marked = {}
    for path, ids in since.items():
        folded = patches.FOLDED_BY_MEMO.get(baseline_in_memo(history_at(path)) or "", patches.FOLDED) | BASELINES
        if ids & folded:
            marked[path.name] = sorted(ids & folded)
    assert not marked, f"histories since the memo with a marker of a patch their baseline folds: {marked}"


def test_a_path_a_later_patch_changed_keeps_its_history_under_the_first_memo() -> None:
    """Each history recorded under the first baseline's memo of a path the newer baseline
    changed is kept beside the path's new recording, so both branches replay."""
    kept = [path for path in recorded() if UNDER_THE_FIRST_MEMO in path.parents]
    assert kept, "the histories recorded under the first baseline's memo are missing"
    for path in kept:
        assert baseline_in_memo(history_at(path)) == patches.BASELINE_2026_11_27, path.name
        again = HISTORIES / path.name
        assert again.exists(), f"{path.name}: no new recording of its path"
        assert baseline_in_memo(history_at(again)) == patches.BASELINE_2026_11_27_2, path.name


def test_a_history_under_the_baseline_marker_holds_it_and_no_folded_one() -> None:
    under = {path: ids for path, ids in patches_recorded().items() if UNDER_THE_BASELINE_MARKER in path.parents}
    assert under, "the histories recorded under the baseline's marker are missing"
    folded = {path.name: sorted(ids & patches.FOLDED) for path, ids in under.items() if ids & patches.FOLDED}
    assert not folded, f"histories under the baseline marker with a folded patch's marker: {folded}"
    # A response's run asks a patch in its first workflow task (`STATE_SHOWN_IN_TEMPORAL`), so
    # each that completed one holds the marker; other workflows may never ask one.
    asking = [path for path in under if _workflow_type(path) == "ResponseWorkflow" and _completed_a_task(path)]
    without = [path.name for path in asking if patches.BASELINE_2026_11_27 not in under[path]]
    assert not without, f"histories under the baseline marker without it: {without}"
    assert not [path.name for path in under if baseline_in_memo(history_at(path)) is not None]


def _workflow_type(path: Path) -> str:
    return history_at(path).events[0].workflow_execution_started_event_attributes.workflow_type.name


def _completed_a_task(path: Path) -> bool:
    return any(event.HasField("workflow_task_completed_event_attributes") for event in history_at(path).events)


def test_histories_before_the_baseline_hold_no_baseline_marker() -> None:
    before = {path: ids for path, ids in patches_recorded().items() if BEFORE_THE_BASELINE in path.parents}
    assert before, "the histories from before the baseline are missing"
    assert not [path.name for path, ids in before.items() if patches.BASELINE_2026_11_27 in ids]
    assert not [path.name for path in before if baseline_in_memo(history_at(path)) is not None]


def test_every_patch_stands_in_a_recorded_history() -> None:
    """By its marker, or by a memo whose baseline folds it."""
    by_memo = [patches.FOLDED_BY_MEMO.get(baseline_in_memo(history_at(path)) or "", set()) for path in recorded()]
    seen = set().union(
        *patches_recorded().values(), *by_memo, {baseline_in_memo(history_at(path)) for path in recorded()}
    )
    assert LISTED | BASELINES <= seen, f"patches no recorded history takes: {sorted(LISTED | BASELINES - seen)}"


def _workflow_types() -> set[str]:
    """The name of every workflow class defined in `workflows/`."""
    names = set()
    for path in sorted((ROOT / "workflows").glob("*.py")):
        module = importlib.import_module(f"workflows.{path.stem}")
        for value in vars(module).values():
            definition = temporalio.workflow._Definition.from_class(value) if isinstance(value, type) else None
            if definition is not None:
                names.add(definition.name)
    return names


def test_every_workflow_type_has_a_recorded_history() -> None:
    registered = _workflow_types()
    assert {"ResponseWorkflow", "FileIngestion", "WebhookDelivery"} <= registered, registered
    replayed = {_workflow_type(path) for path in recorded()}
    assert registered <= replayed, f"workflow types with no recorded history: {sorted(registered - replayed)}"
