"""A burst that drains, not thrashes (issue 61): `--count` background responses, each listing
the demo MCP server's tools and then waiting for an approval, sent to `durable-responses dev`
(the demo model) as fast as it admits them; then how the machine settles.

    python -m bench.burst [--count 10000] [--creators 50] [--settle-minutes 15] [--idle-seconds 60] [--write-docs]

Reports, beside issue 61's goals:
- how long the creates took, and how long after the last of them every response was waiting
  for its approval (`GET /v1/approvals?status=pending` counts them);
- workflow tasks that finished after their timeout: the `dev` log's "Task not found when
  completing" lines (work thrown away and done again);
- the CPU `dev` and its Temporal server then spend idle (a minute, nothing asked), and the
  resident memory of `dev`'s own processes;
- how long an approval of the oldest response takes to be answered.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai
from openai.types.responses import ToolParam

from bench import docs
from bench.processes import Dev, children_of, cpu_seconds
from bench.waiting import approval_seconds, rss_mb

LATE_TASK = "Task not found when completing"
GOALS = {"settle_seconds": 600.0, "late_tasks": 0, "dev_idle": 0.02, "temporal_idle": 0.10, "rss_mb": 400.0}


@dataclass(frozen=True)
class Burst:
    count: int
    create_seconds: float
    settle_seconds: float | None
    """From the last create to every response waiting (None: not within the time given)."""
    waiting: int
    late_tasks: int
    dev_idle: float
    """Cores `dev`'s own processes used while idle."""
    temporal_idle: float
    rss_mb: float
    oldest_approval_ms: float | None
    refused: int
    """Creates refused for admission (429/503), tried again."""

    def rows(self) -> list[str]:
        settled = f"{self.settle_seconds:.0f} s" if self.settle_seconds is not None else f"not all ({self.waiting})"
        approval = f"{self.oldest_approval_ms:.0f} ms" if self.oldest_approval_ms is not None else "refused"
        within = self.settle_seconds is not None and self.settle_seconds <= GOALS["settle_seconds"]
        return [
            f"### A burst of {self.count:,} responses waiting for approval (issue 61)",
            "",
            "| measured | this run | goal | held |",
            "| --- | --- | --- | --- |",
            f"| created as fast as `dev` admits | {self.create_seconds:.0f} s ({self.refused} refused and sent again) "
            "| | |",
            f"| all waiting, after the last create | {settled} | ≤ 600 s | {'held' if within else 'missed'} |",
            f"| workflow tasks finished after their timeout | {self.late_tasks} | 0 | "
            f"{'held' if self.late_tasks == 0 else 'missed'} |",
            f"| idle CPU, `dev` / Temporal | {self.dev_idle:.2%} / {self.temporal_idle:.2%} of a core | ≤ 2 % / ≤ 10 % | "
            f"{'held' if self.dev_idle <= 0.02 and self.temporal_idle <= 0.10 else 'missed'} |",
            f"| RSS of `dev` (without Temporal) | {self.rss_mb:.0f} MB | ≤ 400 MB | "
            f"{'held' if self.rss_mb <= 400 else 'missed'} |",
            f"| the oldest approved, answered in | {approval} | ≤ 200 ms | "
            f"{'held' if self.oldest_approval_ms is not None and self.oldest_approval_ms <= 200 else 'missed'} |",
        ]


async def _create_all(url: str, count: int, creators: int) -> tuple[list[str], int]:
    """Every response created, as fast as `dev` admits them (a refusal is sent again); their ids."""
    client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="bench", timeout=300, max_retries=0)
    tools: list[ToolParam] = [
        {"type": "mcp", "server_label": "demo", "server_url": f"{url}/demo/mcp", "require_approval": "always"}
    ]
    ids: list[str] = [""] * count
    refused = 0
    queue: asyncio.Queue[int] = asyncio.Queue()
    for number in range(count):
        queue.put_nowait(number)

    async def creator() -> None:
        nonlocal refused
        while not queue.empty():
            number = queue.get_nowait()
            while True:
                try:
                    created = await client.responses.create(
                        model="demo/echo", input=f"roll dice with {number % 20 + 2} sides", tools=tools, background=True
                    )
                    ids[number] = created.id
                    break
                except (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError):
                    refused += 1
                    await asyncio.sleep(0.2)

    try:
        await asyncio.gather(*(creator() for _ in range(creators)))
    finally:
        await client.close()
    return ids, refused


def _pending(url: str) -> int:
    """How many approvals wait, as `GET /v1/approvals?status=pending` pages through them."""
    total, after = 0, None
    with httpx.Client(timeout=120) as http:
        while True:
            params: dict[str, str | int] = {"status": "pending", "limit": 100}
            if after:
                params["after"] = after
            page = http.get(f"{url}/v1/approvals", params=params).json()
            total += len(page["data"])
            if not page.get("has_more"):
                return total
            after = page["last_id"]


def _first_request(url: str, response_id: str) -> str | None:
    with httpx.Client(timeout=60) as http:
        output = http.get(f"{url}/v1/responses/{response_id}").json().get("output") or []
    return next((item["id"] for item in output if item.get("type") == "mcp_approval_request"), None)


def measure(count: int, creators: int, settle_minutes: float, idle_seconds: float) -> Burst:
    with tempfile.TemporaryDirectory(prefix="dr-bench-burst-") as data_dir:
        dev = Dev.start(data_dir, None, env={"LOG_LEVEL": "WARNING"})
        try:
            began = time.monotonic()
            ids, refused = asyncio.run(_create_all(dev.url, count, creators))
            created = time.monotonic()
            settled: float | None = None
            waiting = 0
            while time.monotonic() - created < settle_minutes * 60:
                waiting = _pending(dev.url)
                if waiting >= count:
                    settled = time.monotonic() - created
                    break
                time.sleep(10)
            time.sleep(40)  # the orphan sweep looks at each response once, 30 s after it was made
            temporal = set(dev.temporal_pids())
            ours = [dev.process.pid] + [pid for pid in children_of(dev.process.pid) if pid not in temporal]
            before = sum(cpu_seconds(pid) for pid in ours), sum(cpu_seconds(pid) for pid in temporal)
            time.sleep(idle_seconds)
            after = sum(cpu_seconds(pid) for pid in ours), sum(cpu_seconds(pid) for pid in temporal)
            memory = sum(rss_mb(pid) for pid in ours)
            request = _first_request(dev.url, ids[0])
            try:
                oldest = approval_seconds(dev.url, ids[0], request) * 1000 if request else None
            except httpx.HTTPError:
                oldest = None
            late = Path(data_dir, "dev.log").read_text(errors="replace").count(LATE_TASK)
        finally:
            dev.stop()
    return Burst(
        count=count,
        create_seconds=created - began,
        settle_seconds=settled,
        waiting=waiting,
        late_tasks=late,
        dev_idle=(after[0] - before[0]) / idle_seconds,
        temporal_idle=(after[1] - before[1]) / idle_seconds,
        rss_mb=memory,
        oldest_approval_ms=oldest,
        refused=refused,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--creators", type=int, default=50, help="creates sent at once")
    parser.add_argument("--settle-minutes", type=float, default=15)
    parser.add_argument("--idle-seconds", type=float, default=60)
    parser.add_argument("--write-docs", action="store_true", help="write the figures into docs/benchmarks.md")
    options = parser.parse_args()
    started = time.monotonic()
    table = "\n".join(measure(options.count, options.creators, options.settle_minutes, options.idle_seconds).rows())
    print(table)
    if options.write_docs:
        page = docs.write_block("burst", table, time.monotonic() - started, "python -m bench.burst")
        print(f"written into {page}", flush=True)


if __name__ == "__main__":
    main()
