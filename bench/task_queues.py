"""What a task queue's partitions cost a one-process Temporal server whose workers come and go.

    python -m bench.task_queues [--stacks 60]

Two Temporal dev servers in turn, one with the default four partitions a task queue and one
with the single partition `durable-responses dev` configures (`worker/dev.py`). On each,
`--stacks` times: five workers on task queues of their own (as one `dev` or one test stack
polls: the responses' queue and its side queues) start, run one workflow, and stop. It prints
the server's CPU for the churn, and for the half-minute after it while nothing runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from bench.processes import cpu_seconds, free_port

QUEUES_PER_STACK = ("", "-mcp", "-ingestion", "-webhooks", "-sandbox")
PARTITION_SETTINGS = ("matching.numTaskqueueReadPartitions", "matching.numTaskqueueWritePartitions")
IDLE_SECONDS = 30.0


@workflow.defn(name="TaskQueueChurn")
class Nothing:
    @workflow.run
    async def run(self) -> str:
        return "done"


async def _churn(client: Client, stacks: int) -> None:
    for _ in range(stacks):
        queue = f"churn-{uuid.uuid4().hex[:8]}"
        workers = [
            Worker(
                client,
                task_queue=queue + suffix,
                workflows=[Nothing],
                workflow_runner=UnsandboxedWorkflowRunner(),
                build_id="bench",
            )
            for suffix in QUEUES_PER_STACK
        ]
        running = [asyncio.create_task(worker.run()) for worker in workers]
        await client.execute_workflow(Nothing.run, id=f"churn-{uuid.uuid4().hex}", task_queue=queue)
        await asyncio.sleep(0.5)
        for worker in workers:
            await worker.shutdown()
        await asyncio.gather(*running)


async def measure(partitions: int | None, stacks: int, directory: Path) -> tuple[float, float, float]:
    """(CPU seconds of the churn, its wall seconds, CPU seconds of the idle half-minute after)."""
    settings = [] if partitions is None else [f"{key}={partitions}" for key in PARTITION_SETTINGS]
    port = free_port()
    server = subprocess.Popen(
        [
            shutil.which("temporal", path=str(Path(sys.executable).parent)) or "temporal",
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "error",
            "--db-filename",
            str(directory / f"temporal-{partitions}.db"),
            *(argument for setting in settings for argument in ("--dynamic-config-value", setting)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = None
        for _ in range(300):
            with contextlib.suppress(RuntimeError):
                client = await Client.connect(f"127.0.0.1:{port}")
                break
            await asyncio.sleep(0.1)
        assert client is not None, "the Temporal dev server did not start"
        before, started = cpu_seconds(server.pid), time.monotonic()
        await _churn(client, stacks)
        churned, wall = cpu_seconds(server.pid), time.monotonic() - started
        await asyncio.sleep(IDLE_SECONDS)
        return churned - before, wall, cpu_seconds(server.pid) - churned
    finally:
        server.terminate()
        server.wait(30)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stacks", type=int, default=60)
    stacks = parser.parse_args().stacks
    with tempfile.TemporaryDirectory() as directory:
        for label, partitions in (("4 partitions (Temporal's default)", None), ("1 partition (dev's)", 1)):
            churn, wall, idle = await measure(partitions, stacks, Path(directory))
            print(
                f"{label}: {stacks} stacks came and went in {wall:.0f} s, the server spent {churn:.1f} s of CPU; "
                f"then {idle:.2f} s in {IDLE_SECONDS:.0f} s with nothing running",
                flush=True,
            )


if __name__ == "__main__":
    asyncio.run(main())
