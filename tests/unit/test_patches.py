"""The patches and the recorded histories hold together (`workflows/patches.py`): every
`workflow.patched` id in `workflows/` is listed there, every listed one is used, every one
stands in at least one recorded history, and every workflow type the worker runs has a
recorded history to replay."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import temporalio.workflow

from tests.support.histories import patches_recorded, recorded
from workflows import patches

ROOT = Path(__file__).resolve().parents[2]
LISTED = {patch.id for patch in patches.PATCHES}


def _used() -> set[str]:
    constants = {name: value for name, value in vars(patches).items() if name.isupper() and isinstance(value, str)}
    used = set()
    for path in (ROOT / "workflows").glob("*.py"):
        for name in re.findall(r"workflow\.(?:patched|deprecate_patch)\(patches\.([A-Z_]+)\)", path.read_text()):
            used.add(constants[name])
        literal = re.findall(r"workflow\.(?:patched|deprecate_patch)\(\s*[\"']", path.read_text())
        assert not literal, f"{path.name}: a patch id written as a literal (use workflows/patches.py)"
    return used


def test_every_patch_used_is_listed_and_every_listed_one_is_used() -> None:
    assert _used() == LISTED


def test_every_patch_stands_in_a_recorded_history() -> None:
    seen = set().union(*patches_recorded().values())
    assert LISTED <= seen, f"patches no recorded history takes: {sorted(LISTED - seen)}"


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
    replayed = {
        json.loads(path.read_text())["events"][0]["workflowExecutionStartedEventAttributes"]["workflowType"]["name"]
        for path in recorded()
    }
    assert registered <= replayed, f"workflow types with no recorded history: {sorted(registered - replayed)}"
