"""`python -m bench.cluster --minutes N --seed S`: a bed brought up, a seeded workload run
while the nemesis acts, every fault healed, the history checked. The last line printed is
one JSON object: `{"seed", "minutes", "operations", "faults": {kind: count}, "violations":
[...]}`, the list empty when every property held. Exit status 0 then, 1 with violations, 2
when the bed cannot run here (the reason printed instead)."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.cluster.checker import BACKGROUND_KINDS, BUDGET_WINDOW_SECONDS, busiest, check, delivered
from bench.cluster.history import (
    ConversationRead,
    Delivery,
    Fault,
    Final,
    Log,
    Operation,
    SteerRead,
    ToolCall,
    UpstreamCall,
    now,
    read,
)
from bench.cluster.nemesis import Nemesis
from bench.cluster.network import Network, missing
from bench.cluster.nodes import BUDGETS, ROOT, Deployment
from bench.cluster.reading import FINAL_SECONDS

SETTLE_SECONDS = 75.0
"""Kept at the end of a run for healing and the final reading (most runs need far less)."""
DELIVERY_SECONDS = 90.0
"""How long, after the final reading, webhook deliveries may take to catch up: at most this,
and no longer than the run's time has left (10 s at least)."""


def _wait_for(path: Path, seconds: float, process: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not path.exists() and process.poll() is None:
        time.sleep(0.5)
    return path.exists()


def _wait_for_deliveries(history: Path, seconds: float) -> None:
    """Until every response that ended has had its end delivered to the webhook receiver (a
    delivery that failed during a fault is tried again after a backoff), or `seconds` pass."""
    background = {
        response_id
        for operation in read(history / "operations.jsonl", Operation)
        if operation.kind in BACKGROUND_KINDS
        for response_id in operation.response_ids
    }
    ends = {
        (final.response_id, f"response.{final.status}")
        for final in read(history / "finals.jsonl", Final)
        if final.status and final.response_id in background
    }
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not ends <= delivered(read(history / "webhooks.jsonl", Delivery)).keys():
        time.sleep(1)


def run(minutes: float, seed: int, serves: int, workers: int, keep: bool) -> dict[str, Any]:
    began = now()
    until = began + minutes * 60
    directory = Path(tempfile.mkdtemp(prefix="dr-bed-"))
    directory.chmod(0o755)  # PostgreSQL runs as `postgres`, on a disk inside it
    history = directory / "history"
    network = Network(Deployment.node_names(serves, workers)).up()
    deployment = Deployment(network, directory, serves=serves, workers=workers)
    client: subprocess.Popen[bytes] | None = None
    nemesis: Nemesis | None = None
    try:
        deployment.start()
        workload_seconds = max(20.0, until - now() - SETTLE_SECONDS)
        with (directory / "logs" / "client.log").open("ab") as output:
            client = subprocess.Popen(
                network.nodes["client"].command(
                    [sys.executable, "-m", "bench.cluster.client",
                     "--apis", ",".join(deployment.url(name) for name in deployment.serve_names),
                     "--tools", deployment.url("tools"), "--history", str(history),
                     "--seconds", str(workload_seconds), "--seed", str(seed)]
                ),
                cwd=ROOT, stdout=output, stderr=subprocess.STDOUT,
            )  # fmt: skip
        faults = Log(history / "faults.jsonl")
        nemesis = Nemesis(deployment, faults, random.Random(seed))
        nemesis.run(now() + workload_seconds)
        _wait_for(history / "workload_done", 180, client)
        nemesis.heal_all()
        faults.close()
        (history / "healed").touch()
        _wait_for(history / "finals_done", FINAL_SECONDS + 60, client)
        _wait_for_deliveries(history, min(DELIVERY_SECONDS, max(10.0, until - now())))
    finally:
        if client is not None and client.poll() is None:
            client.kill()
        command_runs = deployment.command_runs()
        deployment.stop()
        network.down()
    operations = read(history / "operations.jsonl", Operation)
    upstream = read(history / "upstream.jsonl", UpstreamCall)
    windows = ", ".join(f"{model} {count}" for model, (_, count) in sorted(busiest(upstream).items()))
    print(f"upstream, the busiest {BUDGET_WINDOW_SECONDS:g} s of each model (budgets {BUDGETS}): {windows}", flush=True)
    violations = check(
        operations,
        read(history / "finals.jsonl", Final),
        read(history / "tool_calls.jsonl", ToolCall),
        read(history / "faults.jsonl", Fault),
        command_runs,
        read(history / "conversations.jsonl", ConversationRead),
        read(history / "webhooks.jsonl", Delivery),
        read(history / "steers.jsonl", SteerRead),
        upstream,
        BUDGETS,
    )
    if not (history / "finals_done").exists():
        violations.append(
            {"property": "terminal", "operations": [], "detail": "the final reading never ended", "faults": []}
        )
    if violations or keep:
        print(f"the bed's history and logs: {directory}", flush=True)
    else:
        shutil.rmtree(directory, ignore_errors=True)
    return {
        "seed": seed,
        "minutes": round((now() - began) / 60, 2),
        "operations": len(operations),
        "faults": dict(nemesis.counts) if nemesis else {},
        "violations": violations,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=5)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--serves", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", action="store_true", help="keep the history and logs even when every property held")
    options = parser.parse_args()
    why_not = missing()
    if why_not is not None:
        print(f"the bed cannot run here: {why_not}")
        sys.exit(2)
    seed = options.seed if options.seed is not None else random.randrange(1 << 30)
    outcome = run(options.minutes, seed, options.serves, options.workers, options.keep)
    print(json.dumps(outcome))
    sys.exit(1 if outcome["violations"] else 0)


if __name__ == "__main__":
    main()
