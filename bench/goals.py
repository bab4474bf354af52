"""The issue's goals table: its rows, a run's figures beside them."""

from __future__ import annotations

import statistics

from bench import load, waiting


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def issue_29_rows(
    first_direct: list[float],
    first_dev: list[float],
    serve_direct: list[float],
    serve_first: list[float],
    concurrency_10: load.Loaded,
    relayed: tuple[float, float],
    waits: list[waiting.Waiting],
) -> list[str]:
    """Issue 29's table: its rows, this run's figures, its goals. llama-stack is not part of
    this benchmark; its figures are the issue's (same machine, another run)."""

    def over(direct: list[float], durable: list[float], fraction: float) -> float:
        return load.percentile(durable, fraction) - load.percentile(direct, fraction)

    lines = [
        "Ten thousand waiting, first token first (issue 29)",
        "",
        _row(["measured", "this run", "goal"]),
        _row(["---"] * 3),
        _row(
            [
                "first text delta p50, `dev`",
                f"{statistics.median(first_dev):.1f} ms (+{over(first_direct, first_dev, 0.5):.1f} ms over "
                f"the backend's {statistics.median(first_direct):.1f} ms)",
                "≤ llama-stack's (9.6 ms in the issue's run)",
            ]
        ),
        _row(
            [
                "first text delta, `serve` + a worker in another process: over the backend p50 / p95 / p99",
                " / ".join(f"+{over(serve_direct, serve_first, fraction):.1f}" for fraction in (0.5, 0.95, 0.99))
                + " ms",
                "≤ +15 ms p50",
            ]
        ),
        _row(
            [
                "throughput at concurrency 10",
                f"{concurrency_10.throughput:.1f} req/s",
                "≥ 1.5× llama-stack's (54.5 req/s in the issue's run: ≥ 81.8)",
            ]
        ),
        _row(
            [
                "streamed words relayed per second, one stream",
                f"{relayed[1]:,.0f} (the backend alone: {relayed[0]:,.0f}; {relayed[1] / relayed[0]:.0%})",
                "≥ 90 % of the backend's",
            ]
        ),
    ]
    if waits:
        many, few = waits
        lines += [
            _row(
                [
                    f"{many.count:,} responses waiting for approval: `dev` RSS (without Temporal)",
                    f"{many.rss_mb:.0f} MB ({many.cached:,} workflows cached; made in {many.made_seconds:.0f} s)",
                    "≤ 400 MB",
                ]
            ),
            _row(
                [
                    "idle CPU of waiting responses (chores every 5 s)",
                    f"{many.idle_cpu_ms_per_s:.1f} ms/s with {many.count:,} waiting, "
                    f"{few.idle_cpu_ms_per_s:.1f} ms/s with {few.count}",
                    "independent of how many wait",
                ]
            ),
            _row(
                [
                    "an approval answered after its workflow was evicted: p50 / max",
                    f"{statistics.median(many.approvals_ms):.0f} / {max(many.approvals_ms):.0f} ms",
                    "≤ 200 ms",
                ]
            ),
        ]
    return lines
