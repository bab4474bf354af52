"""How fast one stream relays a reply: words a second, the backend alone against a streamed
response on `durable-responses dev`.

    python -m bench.relay [--words 100000] [--rounds 3]

The scripted backend streams `--words` words, a word a chunk; a client reads them straight
from its chat completions, then as `stream: true` response events (to `response.completed`),
alternately, `--rounds` times each. The client reads bytes without parsing them, so the
figure is the server's rate, not the client's (parsing 20,000 SSE lines in Python is slower
than either server sends them). Prints the median words a second of each, and their
ratio (the goal, issue 29: at least 90 % of the backend's).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.processes import Backend, Dev


def _direct(backend: Backend, words: int) -> float:
    began = time.perf_counter()
    with httpx.stream(
        "POST",
        f"{backend.base_url}/chat/completions",
        timeout=600,
        json={"model": "relay", "stream": True, "messages": [{"role": "user", "content": "go"}]},
    ) as answer:
        for _ in answer.iter_bytes():
            pass
    return words / (time.perf_counter() - began)


def _relayed(dev: Dev, words: int) -> float:
    began, tail, done = time.perf_counter(), b"", False
    with httpx.stream(
        "POST", f"{dev.url}/v1/responses", timeout=600, json={"model": "relay", "input": "go", "stream": True}
    ) as answer:
        for chunk in answer.iter_bytes():
            done = done or b"event: response.completed" in tail + chunk
            tail = chunk[-64:]
    assert done, "the stream ended without response.completed"
    return words / (time.perf_counter() - began)


def measure(
    words: int = 100_000, rounds: int = 3, backend: Backend | None = None, code: Path | None = None
) -> tuple[float, float]:
    """(backend alone, through `dev`): median words a second of one stream. `code`: another
    revision's checkout for `dev` to run (`bench/ab.py`)."""
    own = backend is None
    backend = backend or Backend.start(0)
    reply = {"text": "word " * words, "chunk_chars": 5}
    direct, relayed = [], []
    try:
        with tempfile.TemporaryDirectory(prefix="dr-bench-relay-") as data_dir:
            dev = Dev.start(data_dir, backend, code=code)
            try:
                for _ in range(rounds):
                    backend.script("relay", [reply])
                    direct.append(_direct(backend, words))
                    backend.script("relay", [reply])
                    relayed.append(_relayed(dev, words))
            finally:
                dev.stop()
    finally:
        if own:
            backend.stop()
    return statistics.median(direct), statistics.median(relayed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    direct, relayed = measure(args.words, args.rounds)
    print(
        f"| one stream, {args.words:,} words a word a chunk | backend {direct:,.0f} words/s | "
        f"through `dev` {relayed:,.0f} words/s | {relayed / direct:.0%} | goal ≥ 90 % |"
    )


if __name__ == "__main__":
    main()
