"""What responses that wait cost: `--count` background responses waiting for an MCP
approval on `durable-responses dev` (the demo model and its demo tools), then measured idle.

    python -m bench.waiting [--count 1000] [--idle-seconds 30] [--sweep-seconds 5] [--cached 1000]

Prints the `dev` process tree's resident memory (without its Temporal server), the CPU it
spends per second while nothing happens but its chores (run every `--sweep-seconds`,
`HOUSEKEEPING_INTERVAL_SECONDS`, to show their cost), and how long an approval takes to
be answered (the decision taken by the waiting workflow), for the first five (their
workflows are the least recently used: with more waiting than `MAX_CACHED_WORKFLOWS`, they
were evicted and are replayed from history).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass

import httpx
import openai
from openai.types.responses import ToolParam

from bench.processes import Dev, children_of, cpu_seconds


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def waiting(url: str, count: int) -> list[tuple[str, str]]:
    """`count` background responses, each waiting for its approval: (response id, request id)."""
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="bench", timeout=120, max_retries=5)
    tools: list[ToolParam] = [
        {"type": "mcp", "server_label": "demo", "server_url": f"{url}/demo/mcp", "require_approval": "always"}
    ]
    gate = asyncio.Semaphore(20)

    async def one(n: int) -> tuple[str, str]:
        async with gate:
            created = await client.responses.create(
                model="demo/echo", input=f"roll dice with {n % 20 + 2} sides", tools=tools, background=True
            )
            while True:
                current = await client.responses.retrieve(created.id)
                if current.output and current.output[-1].type == "mcp_approval_request":
                    return created.id, current.output[-1].id
                await asyncio.sleep(0.2)

    try:
        return await asyncio.gather(*(one(n) for n in range(count)))
    finally:
        await client.close()


def approval_seconds(url: str, response_id: str, request_id: str) -> float:
    """How long the approval takes to be answered (the decision is in the workflow)."""
    began = time.monotonic()
    httpx.post(
        f"{url}/v1/responses/{response_id}/approvals",
        timeout=60,
        json={"approval_request_id": request_id, "approve": True},
    ).raise_for_status()
    return time.monotonic() - began


@dataclass
class Waiting:
    count: int
    cached: int
    made_seconds: float
    rss_mb: float
    idle_cpu_ms_per_s: float
    approvals_ms: list[float]

    def row(self, sweep_seconds: float) -> str:
        return (
            f"| {self.count} responses waiting for approval, {self.cached} workflows cached "
            f"(made in {self.made_seconds:.0f} s) | RSS of `dev` (without Temporal) {self.rss_mb:.0f} MB | "
            f"idle CPU {self.idle_cpu_ms_per_s:.1f} ms/s with chores every {sweep_seconds:g} s | approval "
            f"answered p50 {statistics.median(self.approvals_ms):.0f} ms, max {max(self.approvals_ms):.0f} ms |"
        )


def measure(count: int, *, idle_seconds: float = 30, sweep_seconds: float = 5, cached: int = 1000) -> Waiting:
    with tempfile.TemporaryDirectory(prefix="dr-bench-waiting-") as data_dir:
        dev = Dev.start(
            data_dir,
            None,
            env={"HOUSEKEEPING_INTERVAL_SECONDS": str(sweep_seconds), "MAX_CACHED_WORKFLOWS": str(cached)},
        )
        try:
            began = time.monotonic()
            pairs = asyncio.run(waiting(dev.url, count))
            made = time.monotonic() - began
            # The orphan sweep looks at each new response once, 30 s after it was made: let it.
            time.sleep(30 + min(sweep_seconds * 2, 15))
            temporal = set(dev.temporal_pids())
            ours = [dev.process.pid] + [pid for pid in children_of(dev.process.pid) if pid not in temporal]
            memory = sum(rss_mb(pid) for pid in ours)
            cpu_before = sum(cpu_seconds(pid) for pid in ours)
            time.sleep(idle_seconds)
            idle_cpu = (sum(cpu_seconds(pid) for pid in ours) - cpu_before) / idle_seconds
            # The first made are the least recently used: with more waiting than are cached,
            # their workflows were evicted and replay from history on the approval.
            approvals = [approval_seconds(dev.url, *pair) * 1000 for pair in pairs[:5]]
        finally:
            dev.stop()
    return Waiting(count, cached, made, memory, idle_cpu * 1000, approvals)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--idle-seconds", type=float, default=30)
    parser.add_argument("--sweep-seconds", type=float, default=5)
    parser.add_argument("--cached", type=int, default=1000, help="MAX_CACHED_WORKFLOWS: fewer than --count evicts")
    options = parser.parse_args()
    result = measure(
        options.count, idle_seconds=options.idle_seconds, sweep_seconds=options.sweep_seconds, cached=options.cached
    )
    print(result.row(options.sweep_seconds))


if __name__ == "__main__":
    main()
