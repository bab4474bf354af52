"""Latency of durable responses against the upstream backend's own latency, in one run.

    python -m bench.run [--requests 200] [--latency-ms 50]

Starts the scripted backend with a fixed latency, `durable-responses dev` on a fresh data
dir, and a second API process (`durable-responses serve`) on the same Temporal and store
with no worker of its own. Each measurement alternates the backend called directly with
the same call through durable-responses, so both see the same machine noise:

1. non-streaming: a whole chat completion vs a whole response (`dev`);
2. streaming: time to the first text delta, straight from the backend vs through `dev`,
   where the worker and the API share a process and deltas wake the stream at once;
3. the same through `serve`, which learns of events written by the other process by
   polling the store (`STREAM_POLL_SECONDS`, 20 ms by default), and whose workflows start
   through the task queue rather than eagerly;
4. an MCP turn: a response that lists an MCP server, calls one of its tools and answers
   (two inference calls), against the same work done directly: two chat completions and
   one MCP session that lists and calls.
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

from tests.mcp_servers import McpTestServer
from tests.scripted_backend import Reply, ScriptedBackend

CLI = str(Path(sys.executable).parent / "durable-responses")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def start_dev(data_dir: str, backend: ScriptedBackend) -> tuple[subprocess.Popen, str, int]:
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
                return process, url, temporal_port
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise SystemExit("durable-responses dev did not become healthy")


def start_serve(dev_url: str, data_dir: str, temporal_port: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        [CLI, "serve", "--port", str(port), "--temporal-address", f"127.0.0.1:{temporal_port}",
         "--database-url", f"sqlite:///{data_dir}/responses.db"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ | {"LOG_LEVEL": "WARNING"},
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
    raise SystemExit("durable-responses serve did not become healthy")


def first_delta_ms(http: httpx.Client, url: str, body: dict, marker: str) -> float:
    """Milliseconds from sending the request to the first SSE data line that holds `marker`."""
    started = time.perf_counter()
    with http.stream("POST", url, json=body) as answer:
        lines = answer.iter_lines()
        for line in lines:
            if line.startswith("data: ") and marker in line:
                elapsed = (time.perf_counter() - started) * 1000
                for _rest in lines:  # read to the end, as a client would
                    pass
                return elapsed
    raise AssertionError(f"no {marker} in the stream from {url}")


def streaming_pairs(http: httpx.Client, backend_url: str, api_url: str, count: int, warmup: int):
    direct, durable = [], []
    for index in range(warmup + count):
        a = first_delta_ms(http, f"{backend_url}/chat/completions",
                           {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
                           '"content": "echo')
        b = first_delta_ms(http, f"{api_url}/v1/responses", {"model": "bench", "input": "hi", "stream": True},
                           "response.output_text.delta")
        if index >= warmup:
            direct.append(a)
            durable.append(b)
    return direct, durable


def mcp_pairs(backend: ScriptedBackend, api_url: str, count: int, warmup: int) -> tuple[list[float], list[float]]:
    """(direct, durable) milliseconds of one MCP turn, alternating."""
    import asyncio

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    server = McpTestServer().start()
    tool = {"type": "mcp", "server_label": "bench", "server_url": server.url, "require_approval": "never"}
    backend.script("bench-mcp", [reply for _ in range(count + warmup)
                                 for reply in (Reply(tool_calls=[("add", {"a": 1, "b": 2})]), Reply(text="3"))])

    async def measure() -> tuple[list[float], list[float]]:
        direct = openai.AsyncOpenAI(base_url=backend.base_url, api_key="bench", max_retries=0)
        durable = openai.AsyncOpenAI(base_url=f"{api_url}/v1", api_key="bench", max_retries=0)
        direct_ms, durable_ms = [], []
        for index in range(count + warmup):
            started = time.perf_counter()
            await direct.chat.completions.create(model="bench", messages=[{"role": "user", "content": "hi"}])
            async with Client(streamable_http_client(server.url), mode="legacy") as session:
                await session.list_tools()
                await session.call_tool("add", {"a": 1, "b": 2})
            await direct.chat.completions.create(model="bench", messages=[{"role": "user", "content": "hi"}])
            middle = time.perf_counter()
            answer = await durable.responses.create(model="bench-mcp", input="add", tools=[tool])
            ended = time.perf_counter()
            assert answer.status == "completed" and answer.output[1].output == "3", answer
            if index >= warmup:
                direct_ms.append((middle - started) * 1000)
                durable_ms.append((ended - middle) * 1000)
        return direct_ms, durable_ms

    try:
        return asyncio.run(measure())
    finally:
        server.stop()


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
        process, url, temporal_port = start_dev(data_dir, backend)
        serve, serve_url = start_serve(url, data_dir, temporal_port)
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
            with httpx.Client(timeout=60) as http:
                stream_direct, stream_dev = streaming_pairs(http, backend.base_url, url, args.requests, args.warmup)
                serve_direct, stream_serve = streaming_pairs(http, backend.base_url, serve_url, args.requests // 2,
                                                             args.warmup)
            mcp_direct, mcp_durable = mcp_pairs(backend, url, args.requests // 2, args.warmup // 2)
        finally:
            for child in (serve, process):
                child.send_signal(signal.SIGTERM)
                child.wait(timeout=30)
            backend.stop()

    print(f"non-streaming, {args.requests} sequential requests, backend latency {args.latency_ms:.0f} ms")
    base50, base95 = report("backend alone (chat completions)", backend_ms)
    dur50, dur95 = report("durable-responses (responses)", response_ms)
    print(f"  overhead                           p50 {dur50 - base50:+7.1f} ms   p95 {dur95 - base95:+7.1f} ms")
    print(f"  ratio to backend                   p50 {dur50 / base50:7.2f}x    p95 {dur95 / base95:7.2f}x")
    for title, direct, durable, labels in (
        ("streaming, time to first delta, dev (worker in the API process)", stream_direct, stream_dev,
         ("backend alone (first content chunk)", "durable-responses (first delta)")),
        ("streaming, time to first delta, serve (worker in another process)", serve_direct, stream_serve,
         ("backend alone (first content chunk)", "durable-responses (first delta)")),
        ("an MCP turn: list, call, answer (dev)", mcp_direct, mcp_durable,
         ("2 chat calls + 1 MCP session, direct", "durable-responses (one response)")),
    ):
        print(f"{title}, {len(durable)} requests")
        base50, base95 = report(labels[0], direct)
        dur50, dur95 = report(labels[1], durable)
        print(f"  overhead                           p50 {dur50 - base50:+7.1f} ms   p95 {dur95 - base95:+7.1f} ms")
        print(f"  ratio to backend                   p50 {dur50 / base50:7.2f}x    p95 {dur95 / base95:7.2f}x")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
