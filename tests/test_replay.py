"""Replay: workflow code must stay deterministic for histories already recorded.

`tests/histories/*.json` are histories recorded from earlier versions of the code; a change
that would break workflows running in production fails here. Record new ones with
`RECORD_HISTORIES=1 pytest tests/test_replay.py` when a new kind of path is added (files
already there are kept, so they go on testing the code that recorded them).
"""

from __future__ import annotations

import os
from pathlib import Path

import openai
import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.conftest import Stack, until_requested
from tests.scripted_backend import Reply, ScriptedBackend
from workflows.response import ResponseWorkflow

HISTORIES = Path(__file__).parent / "histories"


def replayer() -> Replayer:
    return Replayer(workflows=[ResponseWorkflow], data_converter=pydantic_data_converter)


def recorded() -> list[Path]:
    return sorted(HISTORIES.glob("*.json"))


@pytest.mark.parametrize("path", recorded(), ids=lambda path: path.stem)
async def test_recorded_histories_replay(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    result = await replayer().replay_workflow(history)
    assert result.replay_failure is None


def test_there_are_recorded_histories():
    assert len(recorded()) >= 4, "recorded histories are missing from tests/histories"


async def _scenarios(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str) -> dict[str, str]:
    backend.script(f"{model}-tools", [Reply(tool_calls=[("f", {"a": 1}), ("g", {})])])
    backend.script(f"{model}-fail", [Reply(status=400, error_message="bad")])
    backend.script(f"{model}-retry", [Reply(status=500), Reply(text="ok")])
    backend.script(f"{model}-length", [Reply(text="cut", finish_reason="length")])
    tool = {"type": "function", "name": "f", "parameters": {"type": "object"}}
    tool_g = {"type": "function", "name": "g", "parameters": {"type": "object"}}
    ids = {
        "text": (await sdk.responses.create(model=model, input="hi", instructions="x")).id,
        "function_calls": (await sdk.responses.create(model=f"{model}-tools", input="hi", tools=[tool, tool_g])).id,
        "upstream_rejected": (await sdk.responses.create(model=f"{model}-fail", input="hi")).id,
        "upstream_retried": (await sdk.responses.create(model=f"{model}-retry", input="hi")).id,
        "incomplete": (await sdk.responses.create(model=f"{model}-length", input="hi")).id,
        "unstored": (await sdk.responses.create(model=model, input="hi", store=False)).id,
    }
    async with sdk.responses.stream(model=f"{model}-tools", input="hi", tools=[tool, tool_g]) as stream:
        ids["streamed"] = (await stream.get_final_response()).id
    background = await sdk.responses.create(model=model, input="hi", background=True)
    ids["background"] = background.id
    backend.script(f"{model}-slow", [Reply(text="never", delay=60)])
    doomed = await sdk.responses.create(model=f"{model}-slow", input="hi", background=True)
    await until_requested(backend, f"{model}-slow")
    ids["cancelled"] = (await sdk.responses.cancel(doomed.id)).id
    return ids


async def test_fresh_histories_replay(stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    backend.script(f"{model}-tools", [Reply(tool_calls=[("f", {"a": 1})])])  # for the streamed one
    ids = await _scenarios(sdk, backend, model)
    for name, response_id in ids.items():
        handle = stack.client.get_workflow_handle(response_id)
        await handle.result()
        history = await handle.fetch_history()
        result = await replayer().replay_workflow(history)
        assert result.replay_failure is None, name
        recording = HISTORIES / f"{name}.json"
        if os.environ.get("RECORD_HISTORIES") and not recording.exists():  # earlier recordings stay as they are
            HISTORIES.mkdir(exist_ok=True)
            recording.write_text(history.to_json())
