"""Issue 42's CPU accounting (`bench/goals.py`): where a missed throughput goal was missed."""

from __future__ import annotations

import os
from typing import Any

import pytest

from bench.goals import throughput_budget
from bench.load import Loaded, ProcessCpu

GOAL = 100.0
BUDGET_MS = (os.cpu_count() or 1) * 1000 / GOAL
"""What the goal leaves a response, of every process's CPU on this machine."""


def floor(sdk_ms: float) -> dict[str, Any]:
    return {
        "by_concurrency": {"10": {"throughput_per_s": 120.0, "worker_cpu_ms": sdk_ms, "temporal_cpu_ms": 9.0}},
    }


def loaded(per_second: float, cpu: ProcessCpu) -> Loaded:
    return Loaded(latencies_ms=[10.0] * 200, elapsed_s=200 / per_second, cpu=cpu)


def outside(dev_left_ms: float, dev_ms: float) -> ProcessCpu:
    """Figures whose processes outside `dev` leave it `dev_left_ms`, and `dev` took `dev_ms`."""
    return ProcessCpu(server=dev_ms, temporal=BUDGET_MS - dev_left_ms - 3.0, load_generator=2.5, backend=0.5)


@pytest.mark.parametrize(
    ("per_second", "cpu", "sdk_ms", "verdict"),
    [
        (GOAL, outside(dev_left_ms=1.0, dev_ms=9.0), 6.0, "The goal held."),
        (GOAL * 0.8, outside(dev_left_ms=5.0, dev_ms=9.0), 6.0, "the SDK's share alone is 1.0 ms a response over"),
        (
            GOAL * 0.8,
            outside(dev_left_ms=7.0, dev_ms=9.5),
            6.0,
            "`dev` took 2.5 ms a response more than its share: the goal leaves this project's code 1.0 ms a response, and it spent 3.5.",
        ),
        (GOAL * 0.8, outside(dev_left_ms=9.0, dev_ms=8.0), 6.0, "`dev` kept within its share"),
    ],
    ids=["held", "out of reach of dev", "dev over its share", "dev within its share"],
)
def test_a_missed_throughput_goal_says_on_which_side_of_dev_it_was_missed(
    per_second: float, cpu: ProcessCpu, sdk_ms: float, verdict: str
) -> None:
    said = throughput_budget(10, GOAL, floor(sdk_ms), loaded(per_second, cpu), peers=[])
    assert verdict in said
    left = BUDGET_MS - (cpu.temporal + cpu.load_generator + cpu.backend)
    assert f"that leaves `dev` {left:.1f} ms" in said
    assert (
        f"this project's code (the HTTP API, the store, the model call, the payload codec) {cpu.server - sdk_ms:.1f}"
        in said
    )
