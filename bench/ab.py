"""Two revisions of this repository, one against the other, in the same run: `dev` started
from each in turn (its code from a git worktree of the revision), the same scripted backend,
sequential non-streaming responses, rounds alternating so a drift of the machine falls on both.

    python -m bench.ab d5d4c0c HEAD [--requests 300] [--rounds 2]

Prints each round's p50 and, at the end, the median difference (B - A): what a change costs
a response, beside the whole benchmark's figures that move with the machine from run to run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import openai

from bench.processes import ROOT, Backend, Dev


async def _p50(backend: Backend, code: Path, requests: int) -> float:
    with tempfile.TemporaryDirectory(prefix="dr-bench-ab-") as data_dir:
        dev = Dev.start(data_dir, backend, env={"PYTHONPATH": str(code)})
        try:
            client = openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="bench", max_retries=0)
            for _ in range(max(10, requests // 10)):
                await client.responses.create(model="bench", input="hi")
            samples = []
            for _ in range(requests):
                began = time.perf_counter()
                await client.responses.create(model="bench", input="hi")
                samples.append((time.perf_counter() - began) * 1000)
            await client.close()
            return statistics.median(samples)
        finally:
            dev.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dr-bench-ab-trees-") as trees:
        code = {}
        for name in (args.a, args.b):
            tree = Path(trees) / name.replace("/", "_")
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), name], check=True)
            code[name] = tree
        backend = Backend.start(0)
        figures: dict[str, list[float]] = {args.a: [], args.b: []}
        try:
            for round_ in range(args.rounds):
                for name in (args.a, args.b):
                    figures[name].append(asyncio.run(_p50(backend, code[name], args.requests)))
                    print(f"round {round_ + 1}: {name} p50 {figures[name][-1]:.2f} ms", flush=True)
        finally:
            backend.stop()
            for tree in code.values():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    change = statistics.median(b - a for a, b in zip(figures[args.a], figures[args.b], strict=True))
    print(f"non-streaming p50, {args.b} - {args.a}: {change:+.2f} ms (median of {args.rounds} rounds)")


if __name__ == "__main__":
    main()
