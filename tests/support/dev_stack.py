"""`durable-responses dev` as a user runs it: a real process tree on a data dir of its own,
which a test can stop by signal, kill outright, and start again."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.processes import CLI, free_port
from tests.support.sandboxes import remove_containers
from tests.support.scripted_backend import ScriptedBackend


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


BACKEND_VARIABLES = ("INFERENCE_BASE_URL", "INFERENCE_API_KEY", "OPENAI_API_KEY")


class DevStack:
    """`backend=None` starts `dev` as a newcomer would: no backend configured at all."""

    def __init__(
        self,
        data_dir: Path,
        backend: ScriptedBackend | None,
        env: dict[str, str] | None = None,
        *,
        stderr_apart: bool = False,
    ) -> None:
        """`stderr_apart`: the logs (stderr) go to `errors`, the banner (stdout) to `log`."""
        self.data_dir = data_dir
        self.env = env or {}
        self.port = free_port()
        self.temporal_port = free_port()
        self.backend = backend
        self.process: subprocess.Popen | None = None
        self.log = data_dir / "dev.log"
        self.errors = data_dir / "dev.err" if stderr_apart else self.log

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.backend is None:
            inherited = {name: value for name, value in os.environ.items() if name not in BACKEND_VARIABLES}
            env = inherited | {"WORKFLOW_TASK_TIMEOUT_SECONDS": "2"} | self.env
        else:
            env = (
                os.environ
                | {
                    "INFERENCE_BASE_URL": self.backend.base_url,
                    "INFERENCE_API_KEY": "test",
                    "WORKFLOW_TASK_TIMEOUT_SECONDS": "2",
                }
                | self.env
            )
        self.process = subprocess.Popen(
            [
                CLI,
                "dev",
                "--data-dir",
                str(self.data_dir),
                "--port",
                str(self.port),
                "--temporal-port",
                str(self.temporal_port),
            ],
            stdout=self.log.open("ab"),
            stderr=self.errors.open("ab") if self.errors != self.log else subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group, so a test can kill the whole tree
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

    def crash(self) -> None:
        """SIGKILL every process of the stack at once, as a power cut would."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while (port_open(self.port) or port_open(self.temporal_port)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not port_open(self.port) and not port_open(self.temporal_port)

    def close(self) -> None:
        """The end of a test's stack: every process of it killed, and the containers it made
        removed with their mounts and cgroups (a container outlives its server by design)."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
        asyncio.run(remove_containers(self.data_dir / "containers"))

    def sdk(self) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=f"{self.url}/v1", api_key="x", _strict_response_validation=True, max_retries=0, timeout=30
        )

    def stop(self, signum: int = signal.SIGTERM) -> int:
        assert self.process is not None
        self.process.send_signal(signum)
        return self.process.wait(timeout=30)
