"""Rollouts: readiness that follows the workers within seconds, a worker's own health port,
a stopping worker that lets its calls finish within its grace (and no longer), and `serve`
taking $HOST/$PORT as platforms set them."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.processes import CLI, _cluster_options, _environment, free_port, kill, spawn_worker
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack
from tests.support.waiting import eventually


async def _status(url: str) -> int:
    """The status, or 0 while nothing listens there."""
    async with httpx.AsyncClient(timeout=10) as client:
        try:
            return (await client.get(url)).status_code
        except httpx.ConnectError:
            return 0


async def test_readiness_follows_the_workers_within_seconds(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore
):
    async with running_stack(temporal_address, backend, store, with_worker=False) as stack:
        root = stack.base_url.removesuffix("/v1")
        assert await _status(f"{root}/livez") == 200
        assert await _status(f"{root}/readyz") == 503
        worker = spawn_worker(stack)
        try:
            started = time.monotonic()
            await eventually(lambda: _ready(f"{root}/readyz"), "readiness once a worker runs", seconds=30)
            became_ready = time.monotonic() - started
            worker.send_signal(signal.SIGTERM)
            stopping = time.monotonic()
            await eventually(lambda: _unready(f"{root}/health"), "unreadiness once the last worker stops", seconds=20)
            print(
                f"ready {became_ready:.1f} s after the worker started; unready {time.monotonic() - stopping:.1f} s "
                "after it was told to stop"
            )
            assert await _status(f"{root}/livez") == 200
            assert worker.wait(30) == 0
        finally:
            kill(worker)


async def _ready(url: str) -> bool:
    return await _status(url) == 200


async def _unready(url: str) -> bool:
    return await _status(url) == 503


async def test_a_worker_serves_its_own_health(temporal_address: str, backend: ScriptedBackend, store: EmptyStore):
    async with running_stack(temporal_address, backend, store, with_worker=False) as stack:
        port = free_port()
        log = store.data_dir / "worker.log"
        worker = spawn_worker(stack, log=log, arguments=("--health-port", str(port)))
        try:
            await eventually(lambda: _ready(f"http://127.0.0.1:{port}/readyz"), "the worker's readiness", seconds=30)
            assert await _status(f"http://127.0.0.1:{port}/livez") == 200
            async with httpx.AsyncClient(timeout=5) as http:
                scraped = await http.get(f"http://127.0.0.1:{port}/metrics")
            assert scraped.status_code == 200 and "durable_responses_inference_duration_seconds" in scraped.text
            assert await _status(f"http://127.0.0.1:{port}/v1/responses") == 404, "it serves health, nothing else"
            worker.send_signal(signal.SIGTERM)
            assert await asyncio.to_thread(worker.wait, 30) == 0, log.read_text()
        finally:
            kill(worker)


@pytest.mark.parametrize(("reply_seconds", "calls"), [(2, 1), (30, 2)])
async def test_a_stopping_worker_lets_calls_finish_within_its_grace(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, reply_seconds: float, calls: int
):
    """Grace 5 s: a 2 s model call finishes on the stopping worker (one upstream call); a 30 s
    one is abandoned after the grace and made again by the next worker (two calls). Either
    way the response completes and the worker exits within its grace and a few seconds."""
    model = f"grace-{uuid.uuid4().hex[:6]}"
    backend.script(model, [Reply(text="first", delay=reply_seconds), Reply(text="again")])
    async with running_stack(temporal_address, backend, store, with_worker=False) as stack, stack.sdk() as client:
        log = store.data_dir / "worker.log"
        first = spawn_worker(stack, log=log, env={"SHUTDOWN_GRACE_SECONDS": "5"})
        second = None
        try:
            response = await client.responses.create(model=model, input="hi", background=True)
            await eventually(lambda: len(backend.requests(model)) == 1, "the model call", seconds=30)
            first.send_signal(signal.SIGTERM)
            stopping = time.monotonic()
            assert await asyncio.to_thread(first.wait, 30) == 0
            took = time.monotonic() - stopping
            print(f"a {reply_seconds} s call: the worker stopped in {took:.1f} s")
            assert took < 5 + 3 + 3, log.read_text()
            if calls == 1:
                assert took >= reply_seconds - 1
            second = spawn_worker(stack)
            ended = await eventually(lambda: _ended(client, response.id), "the response's end", seconds=60)
            assert ended.status == "completed"
            assert ended.output_text == ("first" if calls == 1 else "again")
            assert len(backend.requests(model)) == calls
            stopping_line = next(line for line in log.read_text().splitlines() if line.startswith("stopping:"))
            assert stopping_line.startswith("stopping: waiting up to 5 s for 1 model call to finish"), stopping_line
        finally:
            kill(first)
            kill(second)


async def _ended(client, response_id: str):  # noqa: ANN001, ANN202
    response = await client.responses.retrieve(response_id)
    return response if response.status not in ("queued", "in_progress") else None


def test_serve_takes_host_and_port_from_the_environment(stack, tmp_path: Path):
    port = free_port()
    environment = _environment(stack, 2) | {"PORT": str(port), "HOST": "127.0.0.1"}
    serve = subprocess.Popen(
        [CLI, "serve", *_cluster_options(stack)], env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/livez", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("serve did not listen on $PORT")
    finally:
        kill(serve)


@pytest.mark.one_store
async def test_a_versioned_worker_is_its_deployments_first_version_and_responses_run_on_it(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore
):
    """With `WORKER_DEPLOYMENT_NAME`, the workers poll as a version of the deployment (build id:
    the package's version and a digest of the workflow code); the first one makes its version
    current, and responses run on it with the chosen behavior (auto-upgrade)."""
    from temporalio.api.enums.v1 import VersioningBehavior

    from worker.versioning import build_id, current_build_id

    name = f"tests-{uuid.uuid4().hex[:8]}"
    async with running_stack(temporal_address, backend, store, worker_deployment_name=name) as stack:
        assert await current_build_id(stack.client, name) == build_id()
        async with stack.sdk() as sdk:
            response = await sdk.responses.create(model="versioned", input="hi")
        assert response.status == "completed"
        handle = stack.client.get_workflow_handle(response.id)
        await handle.result()  # (the response is handed over before its workflow task is recorded)
        history = await handle.fetch_history()
        tasks = [
            event.workflow_task_completed_event_attributes
            for event in history.events
            if event.HasField("workflow_task_completed_event_attributes")
        ]
        assert tasks, history
        assert {(task.deployment_version.deployment_name, task.deployment_version.build_id) for task in tasks} == {
            (name, build_id())
        }
        assert all(task.versioning_behavior == VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE for task in tasks)
