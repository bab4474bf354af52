"""The issue's goals table: its rows, a run's figures beside them."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable
from typing import Any

from bench import load, waiting
from bench.peers import PeerFigures
from bench.tables import row


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
        row(["measured", "this run", "goal"]),
        row(["---"] * 3),
        row(
            [
                "first text delta p50, `dev`",
                f"{statistics.median(first_dev):.1f} ms (+{over(first_direct, first_dev, 0.5):.1f} ms over "
                f"the backend's {statistics.median(first_direct):.1f} ms)",
                "≤ llama-stack's (9.6 ms in the issue's run)",
            ]
        ),
        row(
            [
                "first text delta, `serve` + a worker in another process: over the backend p50 / p95 / p99",
                " / ".join(f"+{over(serve_direct, serve_first, fraction):.1f}" for fraction in (0.5, 0.95, 0.99))
                + " ms",
                "≤ +15 ms p50",
            ]
        ),
        row(
            [
                "throughput at concurrency 10",
                f"{concurrency_10.throughput:.1f} req/s",
                "≥ 1.5× llama-stack's (54.5 req/s in the issue's run: ≥ 81.8)",
            ]
        ),
        row(
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
            row(
                [
                    f"{many.count:,} responses waiting for approval: `dev` RSS (without Temporal)",
                    f"{many.rss_mb:.0f} MB ({many.cached:,} workflows cached; made in {many.made_seconds:.0f} s)",
                    "≤ 400 MB",
                ]
            ),
            row(
                [
                    "idle CPU of waiting responses (chores every 5 s)",
                    f"{many.idle_cpu_ms_per_s:.1f} ms/s with {many.count:,} waiting, "
                    f"{few.idle_cpu_ms_per_s:.1f} ms/s with {few.count}",
                    "independent of how many wait",
                ]
            ),
            row(
                [
                    "an approval answered after its workflow was evicted: p50 / max",
                    f"{statistics.median(many.approvals_ms):.0f} / {max(many.approvals_ms):.0f} ms",
                    "≤ 200 ms",
                ]
            ),
        ]
    return lines


ISSUE_42_TITLE = "First token at the backend's pace, beside the peers (issue 42)"


def issue_42_rows(
    plain: tuple[list[float], list[float]],
    first: tuple[list[float], list[float]],
    loads: dict[int, load.Loaded],
    floor: dict[str, Any],
    peers: list[PeerFigures],
) -> list[str]:
    """Issue 42's table: durable-responses (`dev`) beside the peers measured in this run, each
    latency with the backend alone measured alternately with it, and the goals; `floor` is the
    unsandboxed Temporal floor's figures (`bench/floor.py`). Where the throughput goal lies
    above the floor, the CPU that each response costs says where it goes."""
    measured = [peer for peer in peers if not peer.missing]
    names = [peer.name for peer in measured]

    def latency(samples: tuple[list[float], list[float]]) -> str:
        direct, through = samples
        return f"{statistics.median(through):.1f} ms (backend {statistics.median(direct):.1f})"

    def fastest(figure: Callable[[PeerFigures], float], best: Callable[[Iterable[float]], float]) -> float | None:
        return best(figure(peer) for peer in measured) if measured else None

    def held(ours: float, bound: float | None, below: bool) -> str:
        if bound is None:
            return "no peer measured"
        return "held" if (ours <= bound if below else ours >= bound) else "missed"

    def above_the_floor(goal: float | None, concurrency: int) -> str:
        reach = floor["throughput_by_concurrency"].get(str(concurrency))
        if goal is None or reach is None or reach >= goal:
            return ""
        return f" (the goal, {goal:.1f}, is above the floor's {reach:.1f})"

    first_peer = fastest(lambda peer: statistics.median(peer.first[1]), min)
    plain_peer = fastest(lambda peer: statistics.median(peer.plain[1]), min)
    first_ours, plain_ours = statistics.median(first[1]), statistics.median(plain[1])
    over_backend = first_ours - statistics.median(first[0])
    lines = [
        ISSUE_42_TITLE,
        "",
        row(["measured (p50)", "durable-responses `dev`", *names, "goal", "this run"]),
        row(["---"] * (4 + len(names))),
        row(
            [
                "first text delta",
                f"{latency(first)}, +{over_backend:.1f} ms",
                *(latency(peer.first) for peer in measured),
                "≤ the fastest peer's, ≤ +5 ms over the backend",
                f"{held(first_ours, first_peer, True)}; {'held' if over_backend <= 5 else 'missed'}",
            ]
        ),
        row(
            [
                "non-streaming",
                f"{latency(plain)}; Temporal floor {floor['p50_ms']:.1f}",
                *(latency(peer.plain) for peer in measured),
                "≤ the fastest peer's",
                held(plain_ours, plain_peer, True),
            ]
        ),
    ]
    for concurrency in (10, 50):
        ours = loads[concurrency]
        best = fastest(lambda peer: peer.loads[concurrency].throughput, max)  # noqa: B023 - called at once
        lines.append(
            row(
                [
                    f"requests/s at concurrency {concurrency} (p95 / p50)",
                    f"{ours.throughput:.1f} ({ours.p95 / ours.p50:.2f})",
                    *(
                        f"{peer.loads[concurrency].throughput:.1f} "
                        f"({peer.loads[concurrency].p95 / peer.loads[concurrency].p50:.2f})"
                        for peer in measured
                    ),
                    "≥ 1.5× the fastest peer's; p95 ≤ 3× p50",
                    f"{held(ours.throughput, best * 1.5 if best else None, False)}"
                    f"{above_the_floor(best * 1.5 if best else None, concurrency)}; "
                    f"{'held' if ours.p95 <= 3 * ours.p50 else 'missed'}",
                ]
            )
        )
    if best_at_10 := fastest(lambda peer: peer.loads[10].throughput, max):
        lines.append(throughput_budget(1.5 * best_at_10, floor, loads[10], measured))
    lines += [f"\n{peer.name}: {peer.missing}" for peer in peers if peer.missing]
    if measured:
        lines.append(
            "\nEach server was measured on the machine alone (the peers after `dev` and its Temporal"
            " server stopped), each latency alternating with the backend alone: compare each"
            " one's overhead over its own backend figure as well as the p50s."
        )
    return lines


def throughput_budget(goal: float, floor: dict[str, Any], ours: load.Loaded, peers: list[PeerFigures]) -> str:
    """Where the CPU of a response goes at concurrency 10, against what the throughput goal
    leaves it on this machine."""
    cores = os.cpu_count() or 1
    budget = cores * 1000 / goal
    driving = ours.cpu.load_generator + ours.cpu.backend
    shape = floor["temporal_cpu_ms"] + floor["worker_cpu_ms"]
    spent = "; ".join(f"through {peer.name} {peer.loads[10].cpu.server:.1f} ms" for peer in peers)
    return (
        f"\nThe throughput goal, {goal:.0f} req/s on {cores} cores, leaves {budget:.1f} ms of CPU a response"
        f" for every process on the machine. At concurrency 10 a response cost the load generator"
        f" {ours.cpu.load_generator:.1f} ms and the backend {ours.cpu.backend:.1f} ms; through `dev`"
        f" {ours.cpu.server:.1f} ms in `dev` and {ours.cpu.temporal:.1f} ms in its Temporal server"
        f"{'; ' + spent if spent else ''}. The Temporal floor, with nothing of this project's in it, reached"
        f" {floor['throughput_per_s']:.1f} req/s, a workflow costing {floor['temporal_cpu_ms']:.1f} ms in"
        f" the Temporal server and {floor['worker_cpu_ms']:.1f} ms in its client and worker: with the load"
        f" generator and the backend, {shape + driving:.1f} ms of the {budget:.1f}, which leaves"
        f" {budget - shape - driving:.1f} ms a response for all the rest (the HTTP API, the store, the model"
        " call, the payload codec)."
    )
