"""`durable-responses dev` as a user runs it: a real process tree, stopped by signal and
started again on the same data dir."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.dev_stack import DevStack, port_open
from tests.support.processes import CLI, free_port
from tests.support.scripted_backend import Reply, ScriptedBackend


@pytest.fixture
def dev(tmp_path: Path, backend: ScriptedBackend):
    stack = DevStack(tmp_path / "data", backend)
    yield stack
    stack.close()


def test_dev_serves_stops_cleanly_and_keeps_responses_across_restarts(dev: DevStack):
    dev.start()
    printed = dev.log.read_text()
    assert f"{dev.url}/v1" in printed and "Temporal UI: http://127.0.0.1:" in printed
    assert (dev.data_dir / "temporal.db").exists() and (dev.data_dir / "responses.db").exists()

    client = openai.OpenAI(base_url=f"{dev.url}/v1", api_key="x", _strict_response_validation=True, max_retries=0)
    first = client.responses.create(model="echo", input="remember me")
    assert first.output_text == "echo: remember me"

    assert dev.stop(signal.SIGTERM) == 0
    assert not port_open(dev.port) and not port_open(dev.temporal_port), "a child outlived the stop"

    dev.start()
    again = client.responses.retrieve(first.id)
    assert again.model_dump() == first.model_dump()
    follow_up = client.responses.create(model="echo", input="and now?", previous_response_id=first.id)
    assert follow_up.status == "completed"
    sent = dev.backend.requests("echo")[-1]["messages"]
    assert sent[:2] == [
        {"role": "user", "content": "remember me"},
        {"role": "assistant", "content": "echo: remember me"},
    ]

    assert dev.stop(signal.SIGINT) == 0
    assert not port_open(dev.port) and not port_open(dev.temporal_port)


def test_health_is_503_until_every_part_is_up(tmp_path: Path, backend: ScriptedBackend):
    """`serve` alone (no worker polling) is up but not healthy."""
    dev = DevStack(tmp_path / "data", backend)
    dev.start()
    try:
        serve_port = free_port()
        env = os.environ | {"INFERENCE_BASE_URL": backend.base_url}
        serve = subprocess.Popen(
            [
                CLI,
                "serve",
                "--port",
                str(serve_port),
                "--temporal-address",
                f"127.0.0.1:{dev.temporal_port}",
                "--task-queue",
                "nobody-polls-this",
                "--database-url",
                f"sqlite:///{tmp_path / 'serve.db'}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        try:
            deadline = time.monotonic() + 30
            answer = None
            while time.monotonic() < deadline:
                try:
                    answer = httpx.get(f"http://127.0.0.1:{serve_port}/health", timeout=5)
                    break
                except httpx.HTTPError:
                    time.sleep(0.2)
            assert answer is not None and answer.status_code == 503
            assert answer.json()["worker"] != "ok" and answer.json()["temporal"] == "ok"
        finally:
            serve.terminate()
            assert serve.wait(timeout=20) == 0
    finally:
        dev.stop()


def _until_terminal(client: openai.OpenAI, response_id: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while (response := client.responses.retrieve(response_id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, f"{response_id} is stuck {response.status}"
        time.sleep(0.1)
    return response


def test_whole_stack_killed_mid_response_every_response_ends_after_restart(dev: DevStack):
    text = " ".join(f"word{index}" for index in range(80))
    dev.start()
    client = dev.sdk()
    kept = client.responses.create(model="echo", input="stored before the crash")
    tag = uuid.uuid4().hex[:8]
    background = [f"crash-{tag}-{index}" for index in range(3)]
    for model in background:
        dev.backend.script(model, [Reply(text="never delivered", delay=30), Reply(text=f"{model} done")])
    streamed_model = f"crash-{tag}-stream"
    dev.backend.script(streamed_model, [Reply(text=text, chunk_delay=0.05), Reply(text=text)])

    created = [client.responses.create(model=model, input="hi", background=True) for model in background]
    before_crash = []
    for event in client.responses.create(model=streamed_model, input="long", stream=True):
        before_crash.append(event)
        if sum(e.type == "response.output_text.delta" for e in before_crash) == 5:
            break
    deadline = time.monotonic() + 10
    while not all(dev.backend.requests(model) for model in background) and time.monotonic() < deadline:
        time.sleep(0.05)
    dev.crash()

    dev.start()
    client = dev.sdk()
    for model, response in zip(background, created, strict=True):
        final = _until_terminal(client, response.id)
        assert final.status == "completed" and final.output_text == f"{model} done"
        assert len(dev.backend.requests(model)) == 2, "the call lost in the crash was made again"
    streamed_id = before_crash[0].response.id
    rest = list(client.responses.retrieve(streamed_id, stream=True, starting_after=before_crash[-1].sequence_number))
    everything = before_crash + rest
    assert [event.sequence_number for event in everything] == list(range(len(everything)))
    assert "".join(e.delta for e in everything if e.type == "response.output_text.delta") == text
    assert everything[-1].type == "response.completed"
    assert client.responses.retrieve(kept.id).model_dump() == kept.model_dump()
    assert dev.stop() == 0


def test_dev_stops_in_bounded_time_with_work_in_flight_and_logs_no_request_urls(
    tmp_path: Path, backend: ScriptedBackend, mcp_server
):
    """A request waiting on a slow model does not hold a stopping `dev`; MCP calls' HTTP
    requests (the `httpx2` logger) and their secrets never reach the log."""
    dev = DevStack(tmp_path / "data", backend, env={"SHUTDOWN_GRACE_SECONDS": "2"})
    dev.start()
    try:
        tag = uuid.uuid4().hex[:8]
        backend.script(f"add-{tag}", [Reply(tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3")])
        secret = f"sk-{tag}-never-logged"
        tool = {
            "type": "mcp",
            "server_label": "tools",
            "server_url": mcp_server.url,
            "require_approval": "never",
            "headers": {"X-Api-Key": secret},
        }
        added = dev.sdk().responses.create(model=f"add-{tag}", input="add", tools=[tool])
        assert added.output_text == "3"

        backend.script(f"slow-{tag}", [Reply(text="too late", delay=120)])
        waiting = threading.Thread(
            target=lambda: _ignore_errors(lambda: dev.sdk().responses.create(model=f"slow-{tag}", input="wait")),
            daemon=True,
        )
        waiting.start()
        deadline = time.monotonic() + 10
        while not backend.requests(f"slow-{tag}") and time.monotonic() < deadline:
            time.sleep(0.05)
        stopping = time.monotonic()
        assert dev.stop(signal.SIGTERM) == 0
        assert time.monotonic() - stopping < 2 + 10, "a request in flight held the process past its grace"
        log = dev.log.read_text()
        assert "HTTP Request" not in log and secret not in log and mcp_server.url not in log
    finally:
        if dev.process is not None and dev.process.poll() is None:
            os.killpg(dev.process.pid, signal.SIGKILL)


def _ignore_errors(call) -> None:  # noqa: ANN001
    try:
        call()
    except Exception:  # noqa: BLE001 - the server stops under it, on purpose
        pass
