"""A shell command outlives its worker: kill -9 of the worker whose host runs it, in a
background response; the worker started again on the same host takes the command up where it
was. It ran once, its output is whole, the response completes. With two workers on two hosts
the other goes on serving while the command's host's worker is away. (`COMMAND_SECONDS` sets
how long the command runs: the issue's ten minutes with `COMMAND_SECONDS=600`.)"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from sandbox.settings import SandboxSettings
from tests.support.processes import kill, spawn_worker
from tests.support.sandboxes import needs_bubblewrap, remove_containers
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, running_stack
from tests.support.waiting import until_terminal

pytestmark = [pytest.mark.one_store, needs_bubblewrap]

SECONDS = int(os.environ.get("COMMAND_SECONDS", "8"))
LINES = SECONDS * 2
COMMAND = f"echo started >> /mnt/data/starts; for i in $(seq 1 {LINES}); do echo line $i; sleep 0.5; done; echo done"


def worker_env(directory: Path) -> dict[str, str]:
    return {"SANDBOX_RUNTIME": "bubblewrap", "SANDBOX_DIR": str(directory), "SANDBOX_COMMAND_SECONDS": "60"}


async def running_on(directories: list[Path], timeout: float = 60) -> Path:
    """The host directory where the command's run has started."""
    for _ in range(int(timeout / 0.1)):
        for directory in directories:
            if any(directory.glob("cntr_*/runs/*/run.json")):
                return directory
        await asyncio.sleep(0.1)
    raise AssertionError("the command never started")


@dataclass
class Hosts:
    """A stack with no worker of its own, and a worker process for each host directory."""

    stack: Stack
    client: openai.AsyncOpenAI
    workers: dict[Path, subprocess.Popen]

    def start(self, host: Path) -> None:
        self.workers[host] = spawn_worker(self.stack, env=worker_env(host))


@contextlib.asynccontextmanager
async def hosts_with_workers(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    tmp_path: Path,
    hosts: list[Path],
    **sandbox: Any,
) -> AsyncIterator[Hosts]:
    settings = SandboxSettings(runtime="bubblewrap", directory=tmp_path / "api", **sandbox)
    running = None
    try:
        async with (
            running_stack(
                temporal_address, backend, store, with_worker=False, task_timeout_seconds=2, sandbox=settings
            ) as stack,
            stack.sdk(timeout=60) as client,
        ):
            running = Hosts(stack, client, {})
            for host in hosts:
                running.start(host)
            yield running
    finally:
        for process in running.workers.values() if running else []:
            kill(process)
        for host in hosts:
            await remove_containers(host)


@pytest.mark.timeout(SECONDS + 300)
@pytest.mark.parametrize("workers", [1, 2], ids=["one worker", "two workers"])
async def test_a_command_survives_kill_9_of_its_worker_and_runs_once(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str, tmp_path: Path, workers: int
):
    hosts = [tmp_path / f"host-{number}" for number in range(workers)]
    backend.script(
        model,
        [
            Reply(tool_calls=[("shell", {"commands": [COMMAND], "timeout_ms": (SECONDS + 120) * 1000})]),
            Reply(text="ok"),
        ],
    )
    async with hosts_with_workers(temporal_address, backend, store, tmp_path, hosts, command_seconds=60) as running:
        client = running.client
        created = await client.responses.create(
            model=model,
            input="count",
            tools=[{"type": "shell", "environment": {"type": "container_auto"}}],
            background=True,
        )
        host = await running_on(hosts)
        await asyncio.sleep(1)
        kill(running.workers[host])
        await asyncio.sleep(2)  # the command goes on with no worker on its host
        running.start(host)
        final = await until_terminal(client, created.id, seconds=SECONDS + 180)
        assert final.status == "completed", final.error
        call, output, message = final.output
        (only,) = output.output
        assert only.outcome.type == "exit" and only.outcome.exit_code == 0
        assert only.stdout.split("\n")[:-1] == [f"line {i}" for i in range(1, LINES + 1)] + ["done"]
        files = {each.path: each async for each in client.containers.files.list(call.environment.container_id)}
        starts = await client.containers.files.content.retrieve(
            files["/mnt/data/starts"].id, container_id=call.environment.container_id
        )
        assert starts.content == b"started\n"  # it ran once
        assert message.content[0].text == "ok"


async def test_a_lost_host_takes_its_containers_and_the_call_says_so(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, model: str, tmp_path: Path
):
    hosts = [tmp_path / "host-0", tmp_path / "host-1"]
    backend.script(
        model,
        [
            Reply(tool_calls=[code_call("x = 1")]),
            Reply(text="set"),
            Reply(tool_calls=[code_call("x")]),
            Reply(text="?"),
        ],
    )
    async with hosts_with_workers(temporal_address, backend, store, tmp_path, hosts, host_wait_seconds=3) as running:
        client = running.client
        tools = [{"type": "code_interpreter", "container": {"type": "auto"}}]
        first = await client.responses.create(model=model, input="set", tools=tools)
        container_id = first.output[0].container_id
        host = next(host for host in hosts if (host / container_id).is_dir())
        kill(running.workers.pop(host))  # for good: the host is gone
        second = await client.responses.create(
            model=model, input="get", tools=[{"type": "code_interpreter", "container": container_id}]
        )
        call = second.output[0]
        assert call.status == "failed"
        said = [m["content"] for m in backend.requests(model)[3]["messages"] if m["role"] == "tool"][-1]
        assert "host did not answer" in said and "not known" in said
        assert (await client.containers.retrieve(container_id)).status == "expired"
        with pytest.raises(openai.NotFoundError):
            await client.responses.create(
                model=model, input="again", tools=[{"type": "code_interpreter", "container": container_id}]
            )


def code_call(source: str) -> tuple[str, dict[str, str]]:
    return ("code_interpreter", {"code": source})
