"""The first model call starts while the response's workflow is being started
(`activities/early_calls.py`): what a client may have seen when the process dies in between,
and what a start that fails leaves behind. Each kills or stops a real process of `dev`."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.dev_stack import DevStack
from tests.support.scripted_backend import Reply, ScriptedBackend

TEXT = " ".join(f"word{index}" for index in range(60))


@pytest.fixture
def dev(tmp_path: Path, backend: ScriptedBackend):
    # The orphan sweep (which starts a response its API kept but never started) looks every second.
    stack = DevStack(tmp_path / "data", backend, env={"HOUSEKEEPING_INTERVAL_SECONDS": "1"})
    yield stack
    if stack.process is not None and stack.process.poll() is None:
        os.killpg(stack.process.pid, signal.SIGKILL)
        stack.process.wait()


def _temporal_pid(dev: DevStack) -> int:
    """The process of the Temporal dev server that `dev` started."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"start-dev" in arguments and str(dev.temporal_port).encode() in arguments:
            return int(entry.name)
    raise AssertionError("no Temporal dev server for this stack")


def _store(dev: DevStack, query: str, *params: Any) -> list[tuple]:
    database = sqlite3.connect(f"file:{dev.data_dir / 'responses.db'}?mode=ro", uri=True)
    try:
        return database.execute(query, params).fetchall()
    finally:
        database.close()


def _until(check, what: str, seconds: float = 30.0) -> Any:  # noqa: ANN001
    deadline = time.monotonic() + seconds
    while not (found := check()):
        assert time.monotonic() < deadline, f"waited {seconds:g} s for {what}"
        time.sleep(0.05)
    return found


def test_killed_after_the_first_delta_before_the_start_is_acknowledged_the_response_completes_once(dev: DevStack):
    """Temporal is stopped (SIGSTOP) as a streamed request arrives: the model is asked and its
    deltas are kept while the start waits for an answer, but the client is sent nothing, not
    even the status line. Then everything is killed (-9). After the restart the kept response is
    started by the sweep and completes once: its stream holds the text once, in order."""
    dev.start()
    model = f"early-{uuid.uuid4().hex[:8]}"
    dev.backend.script(model, [Reply(text=TEXT, chunk_delay=0.02), Reply(text=TEXT)])
    temporal = _temporal_pid(dev)
    seen: list[Any] = []
    broken: list[BaseException] = []

    def stream() -> None:
        try:
            for event in dev.sdk().responses.create(model=model, input="long", stream=True):
                seen.append(event)
        except (openai.APIError, httpx.HTTPError) as error:
            broken.append(error)

    os.kill(temporal, signal.SIGSTOP)
    client = threading.Thread(target=stream, daemon=True)
    try:
        client.start()
        [(response_id,)] = _until(
            lambda: _store(dev, "SELECT DISTINCT response_id FROM events WHERE type = 'response.output_text.delta'"),
            "the first delta in the event log",
        )
        assert dev.backend.requests(model), "the model was asked while Temporal could answer nothing"
        time.sleep(0.3)  # the client would have had time to read what was sent
        assert seen == [], "a client was sent events of a response whose start was not acknowledged"
    finally:
        dev.crash()  # Temporal stopped or not, every process of the stack
    client.join(timeout=30)
    assert seen == [] and broken, "the client's request ended with its server"

    dev.start()
    with dev.sdk() as sdk:
        final = _until(
            lambda: (found := sdk.responses.retrieve(response_id)).status == "completed" and found,
            "the kept response to be started by the sweep and complete",
            seconds=60,
        )
        events = list(sdk.responses.retrieve(response_id, stream=True))
    assert final.output_text == TEXT
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert "".join(event.delta for event in events if event.type == "response.output_text.delta") == TEXT
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    # Asked again after the crash: the early call's claim on the turn died with its process.
    assert len(dev.backend.requests(model)) == 2
    assert dev.stop() == 0


def test_a_start_that_fails_stops_the_early_call_and_leaves_nothing(dev: DevStack):
    """With Temporal gone, a request is refused (503) and neither the response, its events
    nor a claim on its turn is left, though its model call may have begun."""
    dev.start()
    model = f"refused-{uuid.uuid4().hex[:8]}"
    dev.backend.script(model, [Reply(text=TEXT, chunk_delay=0.05)])
    os.kill(_temporal_pid(dev), signal.SIGKILL)
    with dev.sdk() as sdk:
        with pytest.raises(openai.APIStatusError) as refused:
            list(sdk.responses.create(model=model, input="refused", stream=True))
    assert refused.value.status_code == 503
    for table in ("responses", "events", "inference_claims", "input_items"):
        assert _store(dev, f"SELECT COUNT(*) FROM {table}") == [(0,)], table  # noqa: S608 - our own names
