"""durable-responses beside the peers, alone: issue 42's table in a few minutes.

    python -m bench.versus [--requests 100] [--skip-peers]

The same rows as `python -m bench.run`'s issue 42 table (the scripted backend, `dev` on a fresh
data dir, then llama-stack and OGX from `bench/peers.py` on the same backend), without the rest
of the run: for measuring a change to the first token's path against the peers quickly.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile

from bench import canned, goals, peers
from bench.processes import Backend, Dev, dev_cpu, measure_floor


async def run(requests: int, skip_peers: bool) -> str:
    warmup = max(10, requests // 10)
    backend = Backend.start(0)
    try:
        with tempfile.TemporaryDirectory(prefix="dr-bench-versus-") as data_dir:
            dev = Dev.start(data_dir, backend)
            try:
                ours = await peers.measured(
                    "durable-responses", f"{dev.url}/v1", "bench", backend, requests, warmup, cpu=dev_cpu(dev, backend)
                )
                canned_ms = await canned.floor_ms(f"{dev.url}/v1", "bench", requests, warmup)
                floor = measure_floor(dev, requests // 2)
            finally:
                dev.stop()
        measured = [] if skip_peers else await peers.measure_all(backend, requests, warmup)
    finally:
        backend.stop()
    return "\n".join(
        [
            *goals.issue_42_rows(ours.plain, ours.first, ours.loads, floor["unsandboxed"], measured),
            "",
            *goals.issue_61_rows(ours, canned_ms, measured),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100, help="samples per latency row (default 100)")
    parser.add_argument("--skip-peers", action="store_true", help="durable-responses alone")
    args = parser.parse_args()
    logging.disable(logging.INFO)
    print(asyncio.run(run(args.requests, args.skip_peers)), flush=True)


if __name__ == "__main__":
    main()
