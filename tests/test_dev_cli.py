"""`durable-responses dev` as a user runs it: a real process tree, stopped by signal and
started again on the same data dir."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.scripted_backend import ScriptedBackend

CLI = str(Path(sys.executable).parent / "durable-responses")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


class DevStack:
    def __init__(self, data_dir: Path, backend: ScriptedBackend) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.temporal_port = free_port()
        self.backend = backend
        self.process: subprocess.Popen | None = None
        self.log = data_dir / "dev.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = os.environ | {"INFERENCE_BASE_URL": self.backend.base_url, "INFERENCE_API_KEY": "test"}
        self.process = subprocess.Popen(
            [CLI, "dev", "--data-dir", str(self.data_dir), "--port", str(self.port),
             "--temporal-port", str(self.temporal_port)],
            stdout=self.log.open("ab"), stderr=subprocess.STDOUT, env=env,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail("dev stack did not become healthy:\n" + self.log.read_text())
        deadline = time.monotonic() + 10
        while "Temporal UI" not in self.log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)

    def stop(self, signum: int = signal.SIGTERM) -> int:
        assert self.process is not None
        self.process.send_signal(signum)
        return self.process.wait(timeout=30)


@pytest.fixture
def dev(tmp_path: Path, backend: ScriptedBackend):
    stack = DevStack(tmp_path / "data", backend)
    yield stack
    if stack.process is not None and stack.process.poll() is None:
        stack.process.kill()


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
    assert sent[:2] == [{"role": "user", "content": "remember me"}, {"role": "assistant", "content": "echo: remember me"}]

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
            [CLI, "serve", "--port", str(serve_port), "--temporal-address", f"127.0.0.1:{dev.temporal_port}",
             "--task-queue", "nobody-polls-this", "--database-url", f"sqlite:///{tmp_path / 'serve.db'}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
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
