"""What an output `block` moderation policy costs one stream, through `dev`: the first text
delta, and the words a second of a long reply, with and without the policy, alternately in the
same run (`python -m bench.run`'s moderation rows; `docs/guardrails.md`).

The policy's checks go to the scripted backend's `/v1/moderations` (the demo's keyword
classifier, over HTTP), one window (whole sentences, at most 200 characters) at a time.

    python -m bench.moderation [--words 20000] [--requests 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from typing import Any

import httpx

from bench import load
from bench.processes import Backend, Dev

POLICY = {"model": "omni-moderation-latest", "policy": {"output": {"mode": "block"}}}
SENTENCE = "The quick brown fox jumps over the lazy dog. "
"""Nine words, 45 characters: a window holds four sentences."""


async def _words_per_second(http: httpx.AsyncClient, url: str, body: dict[str, Any], words: int) -> float:
    began, tail, done = time.perf_counter(), b"", False
    async with http.stream("POST", url, json=body) as answer:
        async for chunk in answer.aiter_bytes():
            done = done or b"event: response.completed" in tail + chunk
            tail = chunk[-64:]
    assert done, "the stream ended without response.completed"
    return words / (time.perf_counter() - began)


async def measure(
    http: httpx.AsyncClient, dev_url: str, backend: Backend, count: int, warmup: int, words: int = 20_000
) -> dict[str, tuple[float, float]]:
    """{"first delta ms p50": (without, with), "words/s": (without, with)}."""
    url = f"{dev_url}/v1/responses"
    body = {"model": "bench", "input": "hi", "stream": True}
    plain = load.first_delta(http, url, body, "response.output_text.delta")
    held = load.first_delta(http, url, body | {"moderation": POLICY}, "response.output_text.delta")
    first_plain, first_held = await load.alternating_first_delta(plain, held, count, warmup)
    sentences = max(1, words // 9)
    reply = {"text": SENTENCE * sentences, "chunk_chars": 5}
    rates: tuple[list[float], list[float]] = ([], [])
    for _ in range(3):
        for index, moderation in enumerate(({}, {"moderation": POLICY})):
            backend.script("bench-moderated", [reply])
            stream = {"model": "bench-moderated", "input": "go", "stream": True} | moderation
            rates[index].append(await _words_per_second(http, url, stream, sentences * 9))
    return {
        "first delta ms p50": (statistics.median(first_plain), statistics.median(first_held)),
        "words/s": (statistics.median(rates[0]), statistics.median(rates[1])),
    }


def lines(figures: dict[str, tuple[float, float]], words: int = 20_000) -> list[str]:
    plain_ms, held_ms = figures["first delta ms p50"]
    plain_rate, held_rate = figures["words/s"]
    return [
        "| moderation, output `block` (`dev`) | without | with | cost |",
        "| --- | --- | --- | --- |",
        f"| first text delta p50 | {plain_ms:.1f} ms | {held_ms:.1f} ms | +{held_ms - plain_ms:.1f} ms |",
        f"| one stream of {words:,} words | {plain_rate:,.0f} words/s | {held_rate:,.0f} words/s | "
        f"{held_rate / plain_rate:.0%} of the rate |",
    ]


async def _main(words: int, requests: int) -> None:
    backend = Backend.start(0)
    try:
        with tempfile.TemporaryDirectory(prefix="dr-bench-moderation-") as data_dir:
            dev = Dev.start(data_dir, backend)
            try:
                async with httpx.AsyncClient(timeout=600) as http:
                    figures = await measure(http, dev.url, backend, requests, max(3, requests // 10), words)
            finally:
                dev.stop()
    finally:
        backend.stop()
    print("\n".join(lines(figures, words)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(_main(args.words, args.requests))


if __name__ == "__main__":
    main()
