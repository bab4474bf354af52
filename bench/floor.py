"""The Temporal floor: what this design's shape costs with no work of ours in it.

    python -m bench.floor --address 127.0.0.1:7233 [--requests 100] [--temporal-pids 123,124]

One workflow per request, started eagerly on a worker in this process, running two local
activities that do nothing, and its result awaited with `handle.result()`: the start, the
first workflow task, two local-activity markers and the completion, with nothing else. It
prints one JSON line: sequential p50/p95 and throughput at concurrency 10, with the
unsandboxed runner and with the default sandbox, and the CPU each loaded workflow cost this
process (its client and worker) and the Temporal server whose `--temporal-pids` it is given;
the unsandboxed runner's at concurrency 50 too: each level's figures in `by_concurrency`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

with workflow.unsafe.imports_passed_through():  # the sandbox re-imports this module
    from bench.processes import cpu_seconds


@activity.defn(name="floor_nothing")
async def nothing(value: str) -> str:
    return value


@workflow.defn(name="FloorWorkflow")
class FloorWorkflow:
    @workflow.run
    async def run(self, value: str) -> str:
        for _ in range(2):
            value = await workflow.execute_local_activity(nothing, value, start_to_close_timeout=timedelta(seconds=10))
        return value


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


async def _one(client: Client, task_queue: str) -> float:
    started = time.perf_counter()
    handle = await client.start_workflow(
        FloorWorkflow.run, "x", id=f"floor-{uuid.uuid4().hex}", task_queue=task_queue, request_eager_start=True
    )
    await handle.result()
    return (time.perf_counter() - started) * 1000


def _cpu(temporal_pids: list[int]) -> tuple[float, float]:
    """(this process, the Temporal server) CPU seconds so far."""
    return time.process_time(), sum(cpu_seconds(pid) for pid in temporal_pids)


async def measure(
    client: Client,
    sandboxed: bool,
    requests: int,
    concurrency: int,
    temporal_pids: list[int],
    also_at: tuple[int, ...] = (),
) -> dict[str, Any]:
    task_queue = f"floor-{uuid.uuid4().hex[:8]}"
    runner = SandboxedWorkflowRunner() if sandboxed else UnsandboxedWorkflowRunner()
    async with Worker(
        client, task_queue=task_queue, workflows=[FloorWorkflow], activities=[nothing], workflow_runner=runner
    ):
        for _ in range(20):
            await _one(client, task_queue)
        sequential = [await _one(client, task_queue) for _ in range(requests)]
        by_concurrency = {
            level: await _loaded_figures(client, task_queue, 2 * requests, level, temporal_pids)
            for level in (concurrency, *also_at)
        }
    return {
        "p50_ms": statistics.median(sequential),
        "p95_ms": percentile(sequential, 0.95),
        "by_concurrency": {str(level): figures for level, figures in by_concurrency.items()},
    }


async def _loaded_figures(
    client: Client, task_queue: str, requests: int, concurrency: int, temporal_pids: list[int]
) -> dict[str, float]:
    """`requests` workflows at `concurrency`: their throughput, p50, and the CPU each cost this
    process and the Temporal server."""
    started, before = time.perf_counter(), _cpu(temporal_pids)
    loaded = await _loaded(client, task_queue, requests, concurrency)
    elapsed, after = time.perf_counter() - started, _cpu(temporal_pids)
    return {
        "throughput_per_s": len(loaded) / elapsed,
        "loaded_p50_ms": statistics.median(loaded),
        "worker_cpu_ms": (after[0] - before[0]) / len(loaded) * 1000,
        "temporal_cpu_ms": (after[1] - before[1]) / len(loaded) * 1000,
    }


async def _loaded(client: Client, task_queue: str, requests: int, concurrency: int) -> list[float]:
    """`requests` workflows, `concurrency` at a time: each one's time in ms."""
    gate = asyncio.Semaphore(concurrency)

    async def gated() -> float:
        async with gate:
            return await _one(client, task_queue)

    return await asyncio.gather(*(gated() for _ in range(requests)))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", required=True)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--temporal-pids", default="", help="the Temporal server's processes, comma-separated")
    args = parser.parse_args()
    pids = [int(pid) for pid in args.temporal_pids.split(",") if pid]
    client = await Client.connect(args.address)
    result = {
        "unsandboxed": await measure(client, False, args.requests, args.concurrency, pids, also_at=(50,)),
        "sandboxed": await measure(client, True, args.requests, args.concurrency, pids),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    os._exit(0)  # the Temporal client can crash at interpreter exit (sdk-python #300)
