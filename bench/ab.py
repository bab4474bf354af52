"""Two revisions of this repository, one against the other, in the same run: `dev` started
from each in turn (its code from a git worktree of the revision), the same scripted backend,
non-streaming responses, rounds alternating so a drift of the machine falls on both.

    python -m bench.ab d5d4c0c HEAD [--requests 300] [--rounds 2] [--concurrency 10] [--first-delta | --relay [--words 100000] | --ingestion [--files 200]]

Each round measures, for each revision: the sequential p50; then `2 × --requests` responses
at `--concurrency` (10), their throughput and p99, and the CPU each cost in `dev` and in its
Temporal server.
With `--first-delta`, instead: `--requests` streamed responses, each timed to its first text
delta, alternating with the backend alone streaming the same reply (as `bench.run` does).
With `--relay`, instead: one stream of `--words` words, a word a chunk, three times through
`dev` and three times from the backend alone, alternating (`bench/relay.py`): the median words
a second of each, and their ratio (a `dev` of the same code moves it by ±15 points: give it
rounds).
With `--ingestion`, instead: `--files` one-sentence files put in one vector store (embedded by
the scripted backend): the seconds until the store is completed, and until its first file is.
Prints each round's figures and, at the end, the median difference (B - A) of each: what a
change costs a response, beside the whole benchmark's figures that move with the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import httpx
import openai

from bench import load, relay
from bench.processes import ROOT, Backend, Dev, dev_cpu


@dataclass(frozen=True)
class Round:
    """One revision's figures in one round."""

    p50_ms: float
    per_second: float
    dev_cpu_ms: float
    temporal_cpu_ms: float
    loaded_p99_ms: float
    concurrency: int

    def __str__(self) -> str:
        return (
            f"p50 {self.p50_ms:.2f} ms | {self.per_second:.1f} req/s at {self.concurrency}, p99 "
            f"{self.loaded_p99_ms:.0f} ms | CPU per response {self.dev_cpu_ms:.2f} ms in dev, "
            f"{self.temporal_cpu_ms:.2f} ms in Temporal"
        )


@dataclass(frozen=True)
class FirstDeltaRound:
    """One revision's first text deltas in one round (p50s)."""

    backend_ms: float
    through_dev_ms: float
    over_backend_ms: float

    def __str__(self) -> str:
        return (
            f"first delta {self.through_dev_ms:.2f} ms through dev, {self.backend_ms:.2f} ms from the backend "
            f"alone: +{self.over_backend_ms:.2f} ms"
        )


@dataclass(frozen=True)
class RelayRound:
    """One revision's relay of one long stream in one round (medians of three streams)."""

    backend_words_per_second: float
    through_dev_words_per_second: float
    ratio: float

    def __str__(self) -> str:
        return (
            f"{self.through_dev_words_per_second:,.0f} words/s through dev, "
            f"{self.backend_words_per_second:,.0f} from the backend alone: {self.ratio:.0%}"
        )


async def _relay_round(backend: Backend, code: Path, words: int) -> RelayRound:
    direct, relayed = await asyncio.to_thread(relay.measure, words, 3, backend, code)
    return RelayRound(direct, relayed, relayed / direct)


@dataclass(frozen=True)
class IngestionRound:
    """One revision's ingestion of many small files in one round."""

    seconds: float
    first_file_seconds: float

    def __str__(self) -> str:
        return f"completed in {self.seconds:.1f} s, its first file in {self.first_file_seconds:.1f} s"


async def _ingestion_round(backend: Backend, code: Path, files: int) -> IngestionRound:
    with tempfile.TemporaryDirectory(prefix="dr-bench-ab-") as data_dir:
        dev = Dev.start(data_dir, backend, env={"EMBEDDING_MODEL": "bench-embed"}, code=code)
        try:
            async with openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="bench", timeout=120) as client:
                uploaded = [
                    await client.files.create(
                        file=(f"note{n}.txt", f"Note {n}: a comet.".encode()), purpose="assistants"
                    )
                    for n in range(files)
                ]
                began, first = time.monotonic(), None
                store = await client.vector_stores.create(name="ab", file_ids=[file.id for file in uploaded])
                while (store := await client.vector_stores.retrieve(store.id)).status != "completed":
                    if first is None and store.file_counts.completed:
                        first = time.monotonic() - began
                    await asyncio.sleep(0.05)
                seconds = time.monotonic() - began
            return IngestionRound(seconds, seconds if first is None else first)
        finally:
            dev.stop()


async def _first_delta_round(backend: Backend, code: Path, requests: int) -> FirstDeltaRound:
    with tempfile.TemporaryDirectory(prefix="dr-bench-ab-") as data_dir:
        dev = Dev.start(data_dir, backend, code=code)
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                direct = load.backend_first_delta(http, backend.base_url)
                through = load.response_first_delta(http, f"{dev.url}/v1/responses")
                alone, durable = await load.alternating_first_delta(direct, through, requests, max(10, requests // 10))
            backend_ms, through_ms = statistics.median(alone), statistics.median(durable)
            return FirstDeltaRound(backend_ms, through_ms, through_ms - backend_ms)
        finally:
            dev.stop()


async def _round(backend: Backend, code: Path, requests: int, concurrency: int = 10) -> Round:
    with tempfile.TemporaryDirectory(prefix="dr-bench-ab-") as data_dir:
        dev = Dev.start(data_dir, backend, code=code)
        try:
            client = openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="bench", max_retries=0)
            for _ in range(max(10, requests // 10)):
                await client.responses.create(model="bench", input="hi")
            samples = []
            for _ in range(requests):
                began = time.perf_counter()
                await client.responses.create(model="bench", input="hi")
                samples.append((time.perf_counter() - began) * 1000)
            loaded = await load.concurrently(
                lambda: client.responses.create(model="bench", input="hi"),
                2 * requests,
                concurrency,
                dev_cpu(dev, backend),
            )
            await client.close()
            return Round(
                statistics.median(samples),
                loaded.throughput,
                loaded.cpu.server,
                loaded.cpu.temporal,
                loaded.p99,
                concurrency,
            )
        finally:
            dev.stop()


AnyRound = Round | FirstDeltaRound | RelayRound | IngestionRound
MEASURES: dict[str, Callable[[Backend, Path, int], Coroutine[Any, Any, AnyRound]]] = {
    "requests": _round,
    "first_delta": _first_delta_round,
    "relay": _relay_round,
    "ingestion": _ingestion_round,
}
"""Each mode's round, given the revision's code and its size (requests, words or files)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=10, help="of the loaded responses (without a mode)")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--first-delta", action="store_true", help="time streamed responses to their first delta")
    modes.add_argument("--relay", action="store_true", help="words a second of one long stream")
    modes.add_argument("--ingestion", action="store_true", help="many small files into one vector store")
    parser.add_argument("--words", type=int, default=100_000, help="the relay's stream, in words (with --relay)")
    parser.add_argument("--files", type=int, default=200, help="files put in the store (with --ingestion)")
    args = parser.parse_args()
    mode = next((mode for mode in ("first_delta", "relay", "ingestion") if getattr(args, mode)), "requests")
    measure, size = MEASURES[mode], {"relay": args.words, "ingestion": args.files}.get(mode, args.requests)
    if mode == "requests":
        measure = functools.partial(_round, concurrency=args.concurrency)
    with tempfile.TemporaryDirectory(prefix="dr-bench-ab-trees-") as trees:
        code = {}
        for name in (args.a, args.b):
            tree = Path(trees) / name.replace("/", "_")
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), name], check=True)
            # Compiled, as an installed package is: a process started for a file or a command
            # would otherwise compile what it imports every time (PYTHONDONTWRITEBYTECODE).
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree)], check=True)
            code[name] = tree
        backend = Backend.start(0)
        figures: dict[str, list[AnyRound]] = {args.a: [], args.b: []}
        try:
            for round_ in range(args.rounds):
                for name in (args.a, args.b):
                    figures[name].append(asyncio.run(measure(backend, code[name], size)))
                    print(f"round {round_ + 1}: {name}: {figures[name][-1]}", flush=True)
        finally:
            backend.stop()
            for tree in code.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"{args.b} - {args.a}, the median of {args.rounds} rounds:")
    for field in fields(figures[args.a][0]):
        if field.name == "concurrency":
            continue
        change = statistics.median(
            getattr(b, field.name) - getattr(a, field.name)
            for a, b in zip(figures[args.a], figures[args.b], strict=True)
        )
        print(f"  {field.name}: {change:+.2f}")


if __name__ == "__main__":
    main()
