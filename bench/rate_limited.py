"""A rate-limited backend: responses lost, upstream calls per response, fairness between projects.

    python -m bench.rate_limited        (also the last section of `python -m bench.run`)

Each scenario starts the scripted backend behind a token bucket (beyond it a 429 with
`retry-after: 1`, as providers answer) and a fresh `durable-responses dev` (so no budget is
known yet), and drives it with the official `openai` SDK, `max_retries=0`:

1. 20 requests a second admitted, nothing configured: 200 non-streaming requests at
   concurrency 50, then 200 background responses sent at once;
2. the same with `rpm: 1200` in a models file;
3. 10 requests a second admitted, keys for two projects: project A sends 300 background
   responses, then project B sends 10 sequential non-streaming requests (B's latency).

The goals are issue 24's "Done when". Each `dev` takes up to 1,000 open requests a key
(`MAX_INFLIGHT_PER_KEY`), so 300 sent at once measure the upstream's limit, not the API's.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import openai

from bench.processes import CLI, Backend, Dev
from bench.tables import row

Row = list[str]
OPEN_REQUESTS = {"MAX_INFLIGHT_PER_KEY": "1000"}


async def _foreground(client: openai.AsyncOpenAI, count: int, concurrency: int) -> list[str]:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> str:
        async with gate:
            try:
                status = (await client.responses.create(model="limited", input=f"fg {index}")).status
                return status or "no status"
            except openai.APIError as error:
                return f"error {getattr(error, 'status_code', '')}".strip()

    return list(await asyncio.gather(*(one(index) for index in range(count))))


async def _background(client: openai.AsyncOpenAI, count: int, seconds: float = 600) -> tuple[list[str], float]:
    started = time.monotonic()
    created = await asyncio.gather(
        *(client.responses.create(model="limited", input=f"bg {index}", background=True) for index in range(count))
    )
    pending, statuses = {response.id for response in created}, list[str]()
    while pending and time.monotonic() - started < seconds:
        await asyncio.sleep(1.0)
        for response_id in list(pending):
            status = (await client.responses.retrieve(response_id)).status
            if status not in ("queued", "in_progress"):
                statuses.append(status or "no status")
                pending.discard(response_id)
    return statuses + ["unfinished"] * len(pending), time.monotonic() - started


def _sdk(dev: Dev, key: str = "bench") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key=key, max_retries=0, timeout=600)


def _calls(backend: Backend) -> tuple[int, int]:
    counts = backend.calls()
    return counts["_all"], counts["_rate_limited"]


async def _limits(rpm: int | None) -> list[Row]:
    backend = Backend.start(0.0, rate_limit=20)
    rows = []
    with tempfile.TemporaryDirectory(prefix="dr-bench-limited-") as data_dir:
        env = dict(OPEN_REQUESTS)
        if rpm:
            models = Path(data_dir) / "models.yaml"
            models.write_text(
                f"model_list:\n  - model_name: '*'\n    litellm_params:\n      model: openai/*\n"
                f"      api_base: {backend.base_url}\n      rpm: {rpm}\n",
                encoding="utf-8",
            )
            env["MODELS_FILE"] = str(models)
        dev = Dev.start(data_dir, backend, env)
        try:
            client = _sdk(dev)
            label = f"rpm {rpm} in the registry" if rpm else "nothing configured"
            started = time.monotonic()
            statuses = await _foreground(client, 200, 50)
            seconds = time.monotonic() - started
            calls, limited = _calls(backend)
            rows.append(
                [
                    f"200 non-streaming at concurrency 50, {label}",
                    f"{statuses.count('completed')}/200",
                    str(200 - statuses.count("completed")),
                    f"{calls} ({limited})",
                    f"{calls / 200:.3f}",
                    f"{seconds:.1f} s",
                    "200/200, ≤ " + ("1.05" if rpm else "1.3"),
                ]
            )
            statuses, seconds = await _background(client, 200)
            after, after_limited = _calls(backend)
            rows.append(
                [
                    f"200 background sent at once, {label}",
                    f"{statuses.count('completed')}/200",
                    str(200 - statuses.count("completed")),
                    f"{after - calls} ({after_limited - limited})",
                    f"{(after - calls) / 200:.3f}",
                    f"{seconds:.1f} s",
                    "200/200, ≤ " + ("1.05" if rpm else "1.3"),
                ]
            )
            await client.close()
        finally:
            dev.stop()
            backend.stop()
    return rows


def _key(data_dir: str, project: str) -> str:
    made = subprocess.run(
        [CLI, "keys", "create", "--project", project, "--database-url", f"sqlite:///{Path(data_dir) / 'responses.db'}"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return made.stdout.strip()


async def _fairness() -> Row:
    backend = Backend.start(0.0, rate_limit=10)
    with tempfile.TemporaryDirectory(prefix="dr-bench-fair-") as data_dir:
        dev = Dev.start(data_dir, backend, dict(OPEN_REQUESTS))
        try:
            alpha, beta = _sdk(dev, _key(data_dir, "alpha")), _sdk(dev, _key(data_dir, "beta"))
            await asyncio.sleep(2)  # running servers see new keys within a second or two
            flood = asyncio.ensure_future(_background(alpha, 300))
            while _calls(backend)[0] < 20:
                await asyncio.sleep(0.05)
            latencies = []
            for index in range(10):
                started = time.perf_counter()
                await beta.responses.create(model="limited", input=f"beta {index}")
                latencies.append(time.perf_counter() - started)
            statuses, seconds = await flood
            calls, limited = _calls(backend)
            return [
                "A: 300 background, then B: 10 sequential (10 req/s)",
                f"{statuses.count('completed')}/300",
                str(300 - statuses.count("completed")),
                f"{calls} ({limited})",
                f"{calls / 310:.3f}",
                f"B p50 {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s; A in {seconds:.0f} s",
                "A 300/300, B p50 ≤ 2 s",
            ]
        finally:
            dev.stop()
            backend.stop()


async def measure() -> str:
    measured = await _limits(None) + await _limits(1200) + [await _fairness()]
    head = [
        "rate-limited backend (20 req/s, 429 + retry-after: 1)",
        "completed",
        "failed",
        "upstream calls (429s)",
        "calls / response",
        "time",
        "goal",
    ]
    return "\n".join([row(head), row(["---"] * len(head)), *(row(cells) for cells in measured)])


def main() -> None:
    started = time.monotonic()
    print(asyncio.run(measure()))
    print(f"\n(measured in {time.monotonic() - started:.0f} s)", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
