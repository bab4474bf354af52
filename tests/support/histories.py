"""Workflow histories in tests: read decoded (as the UI shows them through the codec endpoint),
recorded for the replay tests (`tests/histories/`), and replayed with the tests' key."""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHistory
from temporalio.worker import Replayer

from sealing.keyring import KeyRing
from tests.support.stack import SECRETS_KEY
from worker.data_converter import data_converter
from workflows import patches
from workflows.ingestion import FileIngestionWorkflow
from workflows.response import ResponseWorkflow
from workflows.webhooks import WebhookDeliveryWorkflow

HISTORIES = Path(__file__).resolve().parents[1] / "histories"
BEFORE_THE_BASELINE = HISTORIES / "before-baseline-2026-11-27"
"""Histories recorded before `patches.BASELINE_2026_11_27`: each folded patch's own marker."""
UNDER_THE_BASELINE_MARKER = HISTORIES / "baseline-marker-2026-11-27"
"""Histories recorded under the baseline's marker, before runs carried it in their memo."""
UNDER_THE_FIRST_MEMO = HISTORIES / "memo-baseline-2026-11-27"
"""Histories recorded under `patches.BASELINE_2026_11_27` in their memo, of paths that the
next baseline (`BASELINE_2026_11_27_2`) changed: recorded again beside this folder."""
STATE_SET_AT_START = HISTORIES / "state-at-start-2026-11-28"
"""Histories of responses that never waited, recorded when every response's `ResponseState`
was set at its start (`created`) and at its end, before it was kept only where Temporal's
status cannot tell it (`models/visibility.state_is_kept`): recorded again in `MODEL_SET_AT_START`."""
MODEL_SET_AT_START = HISTORIES / "model-at-start-2026-11-28"
"""Histories recorded when every response's start set `ResponseModel` (and `PreviousResponseId`),
before a response wrote its search attributes only once it was more than a request answered
(`models/visibility.search_attributes_on`): recorded again beside this folder."""


def replayer() -> Replayer:
    """Reads histories the payload codec encrypted with the tests' key, and older ones in clear.
    Without the SDK's deadlock detection (`debug_mode`): a replay's verdict is whether the code
    makes the recorded decisions, not whether its first activation (which imports the workflow
    modules into the sandbox) took 2 s of a loaded machine's time; a live worker's tasks are
    still checked for it (`tests/stack/test_replay.py` asserts none failed)."""
    return Replayer(
        workflows=[ResponseWorkflow, FileIngestionWorkflow, WebhookDeliveryWorkflow],
        data_converter=data_converter(KeyRing.parse(SECRETS_KEY)),
        debug_mode=True,
    )


async def keep_recording(name: str, client: Client, workflow_id: str, run_id: str | None = None) -> None:
    """With RECORD_HISTORIES set, keep a workflow's history as `tests/histories/<name>.json`
    unless one is there already (earlier recordings stay as they are). It is kept decoded: the
    tests' SECRETS_KEY is new each run, and a history in clear replays with any key. Without
    the variable this reads nothing (tests that time what follows are not slowed)."""
    recording = HISTORIES / f"{name}.json"
    if os.environ.get("RECORD_HISTORIES") and not recording.exists():
        history = await decoded_history(client, workflow_id, run_id)
        HISTORIES.mkdir(exist_ok=True)
        recording.write_text(history.to_json())


def recorded() -> list[Path]:
    """Every recorded history, those from before the baseline too."""
    return sorted(HISTORIES.rglob("*.json"))


@functools.cache
def history_at(path: Path) -> WorkflowHistory:
    """A recorded history, read once per process: parsing one takes ~5 ms, and the patch
    checks read each of them several times. (A history is only read, never changed.)"""
    return WorkflowHistory.from_json(path.stem, path.read_text())


async def decoded_history(client: Client, workflow_id: str, run_id: str | None = None) -> Any:
    """The workflow's history (its latest run's, or `run_id`'s) with every payload decoded by
    the client's codec (as the UI shows it through the codec endpoint), for tests that look
    inside payloads."""
    from google.protobuf.descriptor import FieldDescriptor
    from temporalio.api.common.v1 import Payload

    history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
    codec = client.data_converter.payload_codec
    found: list[Payload] = []

    def walk(message: Any) -> None:
        if isinstance(message, Payload):
            found.append(message)
            return
        for field, value in message.ListFields():
            if field.type != FieldDescriptor.TYPE_MESSAGE:
                continue
            if field.message_type.GetOptions().map_entry:
                values = list(value.values())
            elif field.is_repeated:
                values = list(value)
            else:
                values = [value]
            for item in values:
                if hasattr(item, "ListFields"):
                    walk(item)

    for event in history.events:
        walk(event)
    if codec is not None and found:
        for payload, opened in zip(found, await codec.decode(found), strict=True):
            payload.CopyFrom(opened)
    return history


def patches_in(history: Any) -> set[str]:
    """The patch ids a (decoded) history's markers record: the `workflow.patched` branches it took."""
    found = set()
    for event in history.events:
        if event.HasField("marker_recorded_event_attributes"):
            for payloads in event.marker_recorded_event_attributes.details.values():
                for payload in payloads.payloads:
                    try:
                        marker = json.loads(payload.data)
                    except ValueError:
                        continue
                    if isinstance(marker, dict) and isinstance(marker.get("id"), str) and "deprecated" in marker:
                        found.add(marker["id"])
    return found


def baseline_in_memo(history: Any) -> str | None:
    """The baseline a (decoded) history's run was started under by its memo
    (`patches.start_memo()`), if any."""
    memo = history.events[0].workflow_execution_started_event_attributes.memo.fields
    if patches.BASELINE_MEMO not in memo:
        return None
    said: str = json.loads(memo[patches.BASELINE_MEMO].data)
    return said


def patches_recorded() -> dict[Path, set[str]]:
    """Each recorded history's patch ids, by the history's path."""
    return {path: patches_in(history_at(path)) for path in recorded()}
