"""Where the split deployment's first token goes: each hop of a streamed response through
`serve` and a worker in another process, timed.

    python -m bench.hops [--requests 60]

Starts the scripted backend, `durable-responses dev` (its worker) and a `serve` process on
the same Temporal, store and backend, streams `--requests` responses through `serve`, and
times the moments recorded on the way (all on this machine's clock), each from the request:
its `response.created` written to the store (by `serve`); the first text delta written to the
store (by `serve`'s early call, `activities/early_calls.py`) and read by the client; the
workflow started and its first workflow task handed to the worker (Temporal's history), which
run beside the call now rather than before it. Prints the p50 and p95 of each in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time

import httpx
from temporalio.client import Client

from bench import load
from bench.processes import Backend, Dev, start_serve, stop

HOPS = [
    ("request → created in the store (`serve`)", "sent", "created_written"),
    ("request → first delta in the store (`serve`'s early call: claim, model call, write)", "sent", "delta_written"),
    ("request → first delta at the client", "sent", "delta_read"),
    ("request → workflow started (the start's RPC, beside the call)", "sent", "workflow_started"),
    ("request → first workflow task on the worker (it adopts the call's result)", "sent", "task_started"),
]


async def _one(http: httpx.AsyncClient, url: str) -> tuple[str, dict[str, float]]:
    moments = {"sent": time.time() * 1000}
    response_id = ""
    async with http.stream(
        "POST", f"{url}/v1/responses", json={"model": "bench", "input": "hi", "stream": True}
    ) as answer:
        async for line in answer.aiter_lines():
            if not line.startswith("data: "):
                continue
            if not response_id:
                response_id = json.loads(line[6:])["response"]["id"]
            if "response.output_text.delta" in line and "delta_read" not in moments:
                moments["delta_read"] = time.time() * 1000
    return response_id, moments


async def _recorded(client: Client, database: str, response_id: str, moments: dict[str, float]) -> dict[str, float]:
    history = await client.get_workflow_handle(response_id).fetch_history()
    first: dict[str, float] = {}
    for event in history.events:
        if kind := event.WhichOneof("attributes"):
            first.setdefault(kind, event.event_time.ToMilliseconds())
    with sqlite3.connect(database) as db:
        written = dict(
            db.execute(
                "SELECT type, MIN(written_at) FROM events WHERE response_id = ? GROUP BY type", (response_id,)
            ).fetchall()
        )
    return moments | {
        "created_written": written["response.created"],
        "workflow_started": first["workflow_execution_started_event_attributes"],
        "task_started": first["workflow_task_started_event_attributes"],
        "delta_written": written["response.output_text.delta"],
    }


async def measure(requests: int = 60, warmup: int = 10) -> list[tuple[str, float, float]]:
    """(hop, p50 ms, p95 ms) of each hop."""
    backend = Backend.start(0)
    try:
        with tempfile.TemporaryDirectory(prefix="dr-bench-hops-") as data_dir:
            dev = Dev.start(data_dir, backend)
            serve, url = start_serve(dev, backend)
            try:
                client = await Client.connect(dev.temporal_address)
                async with httpx.AsyncClient(timeout=60) as http:
                    samples = [await _one(http, url) for _ in range(warmup + requests)][warmup:]
                timed = [
                    await _recorded(client, f"{data_dir}/responses.db", response_id, moments)
                    for response_id, moments in samples
                ]
            finally:
                stop(serve)
                dev.stop()
    finally:
        backend.stop()
    rows = []
    for name, start, end in HOPS:
        spans = [each[end] - each[start] for each in timed]
        rows.append((name, statistics.median(spans), load.percentile(spans, 0.95)))
    return rows


def table(rows: list[tuple[str, float, float]]) -> list[str]:
    return [
        "| the first token's way, `serve` + a worker in another process | p50 | p95 |",
        "| --- | --- | --- |",
        *(f"| {name} | {p50:.1f} ms | {p95:.1f} ms |" for name, p50, p95 in rows),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    print("\n".join(table(asyncio.run(measure(args.requests)))))


if __name__ == "__main__":
    main()
