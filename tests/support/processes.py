"""Our roles as real processes, for tests that kill them: `durable-responses worker` and
`durable-responses serve`, pointed at a test stack's Temporal, task queue and store."""

from __future__ import annotations

import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.stack import Stack

CLI = str(Path(sys.executable).parent / "durable-responses")


LISTEN_PORTS = range(20000, 32000)
"""Where the tests' servers listen: below the kernel's ephemeral range (32768-60999 here), so a
port found free is not taken, before its server binds it, by one of the many outbound
connections the suite makes (each draws its local port from the ephemeral range)."""


def free_port() -> int:
    for _ in range(200):
        port = random.choice(LISTEN_PORTS)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as probe:  # a crowded range: any port the kernel gives
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _cluster_options(stack: Stack) -> list[str]:
    return [
        "--temporal-address",
        stack.settings.temporal_address,
        "--task-queue",
        stack.settings.task_queue,
        "--database-url",
        stack.settings.database_url,
    ]


def _environment(stack: Stack, task_timeout_seconds: float) -> dict[str, str]:
    return os.environ | {
        "INFERENCE_BASE_URL": stack.settings.inference_base_url,
        "INFERENCE_API_KEY": "test",
        "WORKFLOW_TASK_TIMEOUT_SECONDS": str(task_timeout_seconds),
        "SECRETS_KEY": stack.settings.secrets_key,
        "EGRESS_ALLOWLIST": stack.settings.egress_allowlist,
        # The stack's own containers: never the default ./.durable-responses/containers, where a
        # `dev` the developer runs keeps its own (a test worker's chores would remove them).
        "SANDBOX_DIR": str(stack.settings.sandbox.directory),
    }


def spawn_worker(
    stack: Stack, *, log: Path | None = None, env: dict[str, str] | None = None, arguments: tuple[str, ...] = ()
) -> subprocess.Popen:
    output = log.open("ab") if log else subprocess.DEVNULL
    return subprocess.Popen(
        [CLI, "worker", *_cluster_options(stack), *arguments],
        env=_environment(stack, 2) | (env or {}),
        stdout=output,
        stderr=subprocess.STDOUT,
    )


def spawn_api(
    stack: Stack, *, task_timeout_seconds: float = 2, env: dict[str, str] | None = None, log: Path | None = None
) -> tuple[subprocess.Popen, str]:
    """`serve` on a port of its own; returns the process and its `/v1` URL once it answers
    (`log`: where its output goes, appended; else nowhere)."""
    port = free_port()
    output = log.open("ab") if log else subprocess.DEVNULL
    process = subprocess.Popen(
        [CLI, "serve", "--port", str(port), *_cluster_options(stack)],
        env=_environment(stack, task_timeout_seconds) | (env or {}),
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, "serve exited"
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
            return process, f"http://127.0.0.1:{port}/v1"
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("serve did not answer")


def kill(process: subprocess.Popen | None) -> None:
    """SIGKILL, as a crash would."""
    if process is not None and process.poll() is None:
        process.send_signal(signal.SIGKILL)
        process.wait()
