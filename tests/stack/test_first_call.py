"""The first model call starts while the response's workflow is being started
(`activities/early_calls.py`): what a client may have seen when the process dies in between,
what a start that fails leaves behind (each kills or stops a real process of `dev`), and the
split deployment, where `serve` makes the call and a worker elsewhere adopts it."""

from __future__ import annotations

import asyncio
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
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

from tests.support.dev_stack import DevStack
from tests.support.processes import kill, spawn_api, spawn_worker
from tests.support.prometheus import scrape, total
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack

TEXT = " ".join(f"word{index}" for index in range(60))


@pytest.fixture
def dev(tmp_path: Path, backend: ScriptedBackend):
    # The orphan sweep (which starts a response its API kept but never started) looks every second.
    stack = DevStack(tmp_path / "data", backend, env={"HOUSEKEEPING_INTERVAL_SECONDS": "1"})
    yield stack
    stack.close()


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
    """Temporal is stopped (SIGSTOP) as a streamed request arrives: the model is asked while the
    start waits for an answer, and the client is sent the response's first events, deltas
    among them (the response is in the store, so its start is certain: the sweep makes it if
    this one fails). Then everything is killed (-9). After the restart the sweep starts the
    response, it completes once, and the client resumes its stream where it broke off: every
    event once, in order, the text whole."""
    dev.start()
    model = f"early-{uuid.uuid4().hex[:8]}"
    dev.backend.script(model, [Reply(text=TEXT, chunk_delay=0.05), Reply(text=TEXT)])
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
        _until(lambda: sum(event.type == "response.output_text.delta" for event in seen) >= 3, "three deltas")
        assert not dev.backend.requests(model)[1:], "asked once so far"
    finally:
        dev.crash()  # Temporal still stopped: the start was never acknowledged
    client.join(timeout=30)
    assert broken and seen[-1].type == "response.output_text.delta", "the stream ended with its server"
    response_id = seen[0].response.id
    assert seen[0].type == "response.created"

    dev.start()
    with dev.sdk() as sdk:
        final = _until(
            lambda: (found := sdk.responses.retrieve(response_id)).status == "completed" and found,
            "the kept response to be started by the sweep and complete",
            seconds=90,
        )
        rest = list(sdk.responses.retrieve(response_id, stream=True, starting_after=seen[-1].sequence_number))
    everything = seen + rest
    assert final.output_text == TEXT
    assert [event.sequence_number for event in everything] == list(range(len(everything)))
    assert "".join(event.delta for event in everything if event.type == "response.output_text.delta") == TEXT
    assert everything[-1].type == "response.completed"
    # Asked again after the crash: the early call's claim on the turn died with its process.
    assert len(dev.backend.requests(model)) == 2
    assert dev.stop() == 0


def _workflow_status(dev: DevStack, response_id: str) -> WorkflowExecutionStatus | None:
    """The response's workflow's status in the stack's Temporal, None while it has none."""

    async def described() -> WorkflowExecutionStatus | None:
        client = await Client.connect(f"127.0.0.1:{dev.temporal_port}")
        try:
            return (await client.get_workflow_handle(response_id).describe()).status
        except RPCError:
            return None

    return asyncio.run(described())


def test_killed_after_the_call_wrote_the_end_before_temporal_had_it_the_end_stays_as_written(dev: DevStack):
    """A first turn's call writes the end of a response its answer ends
    (`workflows/response_end.py`), so a client may hold the end before Temporal has the call's
    result. Temporal is stopped (SIGSTOP) once the start is acknowledged, the client reads the
    whole stream to `response.completed`, and everything is killed (-9). After the restart a
    worker runs the turn again: it takes the recorded answer (the model is not asked again),
    writes the end again, which changes nothing, and the workflow completes. The client's end
    is the stored one, and the log holds one end."""
    dev.start()
    model = f"ended-{uuid.uuid4().hex[:8]}"
    dev.backend.script(model, [Reply(text=TEXT, delay=1.0), Reply(text="asked twice")])
    temporal = _temporal_pid(dev)
    seen: list[Any] = []

    def stream() -> None:
        seen.extend(dev.sdk().responses.create(model=model, input="long", stream=True))

    client = threading.Thread(target=stream, daemon=True)
    client.start()
    response_id = _until(lambda: seen and seen[0].response.id, "the stream to begin")
    _until(lambda: _workflow_status(dev, response_id) == WorkflowExecutionStatus.RUNNING, "the start")
    os.kill(temporal, signal.SIGSTOP)
    try:
        client.join(timeout=30)
        assert not client.is_alive(), "the stream ended while Temporal was stopped"
    finally:
        dev.crash()
    ended = seen[-1]
    assert ended.type == "response.completed" and ended.response.output_text == TEXT

    dev.start()
    _until(
        lambda: _workflow_status(dev, response_id) == WorkflowExecutionStatus.COMPLETED,
        "the workflow to run the turn again and complete",
        seconds=90,
    )
    with dev.sdk() as sdk:
        stored = sdk.responses.retrieve(response_id)
    assert stored.model_dump() == ended.response.model_dump()
    assert len(dev.backend.requests(model)) == 1
    ends = "SELECT COUNT(*) FROM events WHERE response_id = ? AND type = 'response.completed'"
    assert _store(dev, ends, response_id) == [(1,)]
    assert dev.stop() == 0


def test_a_start_that_fails_stops_the_early_call_and_leaves_nothing(dev: DevStack):
    """With Temporal gone, a request whose call has streamed nothing yet is refused (503), and
    neither the response, its events nor a claim on its turn is left, though its call began."""
    dev.start()
    model = f"refused-{uuid.uuid4().hex[:8]}"
    dev.backend.script(model, [Reply(text=TEXT, delay=30)])  # nothing streamed before the start fails
    os.kill(_temporal_pid(dev), signal.SIGKILL)
    with dev.sdk() as sdk:
        with pytest.raises(openai.APIStatusError) as refused:
            list(sdk.responses.create(model=model, input="refused", stream=True))
    assert refused.value.status_code == 503
    for table in ("responses", "events", "inference_claims", "input_items"):
        assert _store(dev, f"SELECT COUNT(*) FROM {table}") == [(0,)], table  # noqa: S608 - our own names


async def test_serve_begins_the_first_turn_and_a_worker_elsewhere_adopts_it(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str, tmp_path: Path
):
    """A split deployment: `serve` makes the first turn's call itself while the workflow starts
    on a worker in another process, whose execution of the turn finds it claimed and takes its
    recorded result. Each response is asked of the model once, by `serve` (its own metrics
    count the calls), streamed or not."""
    backend.script(model, [Reply(text="answered whole"), Reply(text=TEXT, chunk_delay=0.005)])
    logs = {"serve": tmp_path / "serve.log", "worker": tmp_path / "worker.log"}
    try:
        async with running_stack(temporal_address, backend, store, with_worker=False) as stack:
            api, url = spawn_api(stack, log=logs["serve"])
            worker = spawn_worker(stack, log=logs["worker"])
            try:
                async with openai.AsyncOpenAI(
                    base_url=url, api_key="test", max_retries=0, timeout=60, _strict_response_validation=True
                ) as client:
                    whole = await client.responses.create(model=model, input="hi")
                    events = [
                        event async for event in await client.responses.create(model=model, input="go", stream=True)
                    ]
                scraped = await scrape(url.removesuffix("/v1"))
            finally:
                kill(api)
                kill(worker)
        assert whole.status == "completed" and whole.output_text == "answered whole"
        assert events[-1].type == "response.completed" and events[-1].response.output_text == TEXT
        assert "".join(event.delta for event in events if event.type == "response.output_text.delta") == TEXT
        assert len(backend.requests(model)) == 2
        made_by_serve = total(scraped, "durable_responses_inference_duration_seconds_count", outcome="ok")
        assert made_by_serve == 2, {key: value for key, value in scraped.items() if "inference" in key}
    except BaseException:
        # It failed twice in about a dozen group runs with nothing to read: now the two
        # processes' own words are shown with the failure.
        for name, log in logs.items():
            print(f"--- {name}'s output\n{log.read_text(errors='replace') if log.exists() else '(none)'}")
        raise
