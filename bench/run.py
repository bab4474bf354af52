"""Latency of a durable response against the upstream backend's own latency, in one run.

    python -m bench.run [--requests 200] [--latency-ms 50]

Starts the scripted backend with a fixed latency and `durable-responses dev` on a fresh
data dir, then alternates two measurements so both see the same machine noise:
the backend called directly (chat completions) and a non-streaming response through
durable-responses (the same backend behind it). Prints p50/p95 of both and the overhead.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import openai

from tests.scripted_backend import ScriptedBackend

CLI = str(Path(sys.executable).parent / "durable-responses")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def start_dev(data_dir: str, backend: ScriptedBackend) -> tuple[subprocess.Popen, str]:
    port, temporal_port = free_port(), free_port()
    env = os.environ | {"INFERENCE_BASE_URL": backend.base_url, "INFERENCE_API_KEY": "bench", "LOG_LEVEL": "WARNING"}
    process = subprocess.Popen(
        [CLI, "dev", "--data-dir", data_dir, "--port", str(port), "--temporal-port", str(temporal_port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("durable-responses dev did not become healthy")


def report(name: str, samples: list[float]) -> tuple[float, float]:
    p50, p95 = statistics.median(samples), percentile(samples, 0.95)
    print(f"  {name:<34} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
    return p50, p95


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()

    backend = ScriptedBackend(latency=args.latency_ms / 1000).start()
    with tempfile.TemporaryDirectory(prefix="dr-bench-") as data_dir:
        process, url = start_dev(data_dir, backend)
        try:
            direct = openai.OpenAI(base_url=backend.base_url, api_key="bench", max_retries=0)
            durable = openai.OpenAI(base_url=f"{url}/v1", api_key="bench", max_retries=0)
            backend_ms: list[float] = []
            response_ms: list[float] = []
            for index in range(args.warmup + args.requests):
                started = time.perf_counter()
                direct.chat.completions.create(model="bench", messages=[{"role": "user", "content": "hi"}])
                middle = time.perf_counter()
                answer = durable.responses.create(model="bench", input="hi")
                ended = time.perf_counter()
                assert answer.status == "completed", answer
                if index >= args.warmup:
                    backend_ms.append((middle - started) * 1000)
                    response_ms.append((ended - middle) * 1000)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)
            backend.stop()

    print(f"non-streaming, {args.requests} sequential requests, backend latency {args.latency_ms:.0f} ms")
    base50, base95 = report("backend alone (chat completions)", backend_ms)
    dur50, dur95 = report("durable-responses (responses)", response_ms)
    print(f"  overhead                           p50 {dur50 - base50:+7.1f} ms   p95 {dur95 - base95:+7.1f} ms")
    print(f"  ratio to backend                   p50 {dur50 / base50:7.2f}x    p95 {dur95 / base95:7.2f}x")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
