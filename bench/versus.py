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

import httpx
import openai

from bench import goals, load, peers
from bench.processes import Backend, Dev, measure_floor


async def run(requests: int, skip_peers: bool) -> str:
    warmup = max(10, requests // 10)
    backend = Backend.start(0)
    try:
        with tempfile.TemporaryDirectory(prefix="dr-bench-versus-") as data_dir:
            dev = Dev.start(data_dir, backend)
            try:
                direct = openai.AsyncOpenAI(base_url=backend.base_url, api_key="bench", max_retries=0, timeout=120)
                durable = openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="bench", max_retries=0, timeout=300)
                hi = [{"role": "user", "content": "hi"}]
                plain = await load.alternating(
                    lambda: direct.chat.completions.create(model="bench", messages=hi),  # type: ignore[arg-type]
                    lambda: durable.responses.create(model="bench", input="hi"),
                    requests,
                    warmup,
                )
                async with httpx.AsyncClient(timeout=120) as http:
                    first = await load.alternating_first_delta(
                        load.first_delta(
                            http,
                            f"{backend.base_url}/chat/completions",
                            {"model": "bench", "stream": True, "messages": hi},
                            '"content": "echo',
                        ),
                        load.first_delta(
                            http,
                            f"{dev.url}/v1/responses",
                            {"model": "bench", "input": "hi", "stream": True},
                            "response.output_text.delta",
                        ),
                        requests,
                        warmup,
                    )
                loads = {}
                for concurrency in (10, 50):
                    await load.concurrently(
                        lambda: durable.responses.create(model="bench", input="hi"), 40, concurrency
                    )
                    loads[concurrency] = await load.concurrently(
                        lambda: durable.responses.create(model="bench", input="hi"), 200, concurrency
                    )
                floor = measure_floor(dev, requests // 2)
            finally:
                dev.stop()
        measured = [] if skip_peers else await peers.measure_all(backend, requests, warmup)
    finally:
        backend.stop()
    return "\n".join(goals.issue_42_rows(plain, first, loads, floor["unsandboxed"]["p50_ms"], measured))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100, help="samples per latency row (default 100)")
    parser.add_argument("--skip-peers", action="store_true", help="durable-responses alone")
    args = parser.parse_args()
    logging.disable(logging.INFO)
    print(asyncio.run(run(args.requests, args.skip_peers)), flush=True)


if __name__ == "__main__":
    main()
