"""Code in containers, against `dev` (bubblewrap sandboxes, as the tests use):

    python -m bench.code_execution [--calls 40]

1. a cold container's first `print(1)`: a response whose `"auto"` container is made for it
   (its directory, cgroup and tmpfs, then a fresh interpreter), from request to answer;
2. a warm call's round trip: the same, in a container whose interpreter runs already;
3. beside them, in the same run: the backend alone (the two chat completions such a response
   makes), and a plain response (one chat completion, no tool);
4. 20 containers in use at once on this machine: 20 responses at the same time, each
   computing in a container of its own (numpy over 8 million floats, then a 1 s sleep), with
   the wall time, the memory of the sandboxes (their cgroups' processes) and the server's own.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import openai
from openai.types.responses import ResponseCodeInterpreterToolCall
from openai.types.responses.tool_param import CodeInterpreterContainer

from bench.attacks import rss_mib
from bench.load import percentile
from bench.processes import Backend, Dev
from bench.tables import row
from sandbox.containers import ContainerHost

AT_ONCE = 20
BUSY_CODE = "import numpy as np, time\nx = np.arange(8_000_000, dtype=float)\nprint(float(x.sum()))\ntime.sleep(1)"


def _times(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} / {percentile(values, 0.95):.1f} ms"


async def _code_response(
    client: openai.AsyncOpenAI, backend: Backend, container: CodeInterpreterContainer, code: str
) -> float:
    model = f"bench-{uuid.uuid4().hex[:8]}"
    backend.script(model, [{"tool_calls": [["code_interpreter", {"code": code}]]}, {"text": "done"}])
    began = time.perf_counter()
    response = await client.responses.create(
        model=model, input="run it", tools=[{"type": "code_interpreter", "container": container}]
    )
    took = (time.perf_counter() - began) * 1000
    call = response.output[0]
    assert response.status == "completed" and isinstance(call, ResponseCodeInterpreterToolCall), response.output
    assert call.status == "completed", call
    return took


async def _plain_response(client: openai.AsyncOpenAI, backend: Backend) -> float:
    model = f"bench-{uuid.uuid4().hex[:8]}"
    backend.script(model, [{"text": "done"}])
    began = time.perf_counter()
    await client.responses.create(model=model, input="hi")
    return (time.perf_counter() - began) * 1000


async def _backend_alone(backend: Backend) -> float:
    """Two chat completions, as a response with one tool call makes."""
    model = f"bench-{uuid.uuid4().hex[:8]}"
    backend.script(model, [{"tool_calls": [["code_interpreter", {"code": "print(1)"}]]}, {"text": "done"}])
    async with httpx.AsyncClient(base_url=backend.base_url, timeout=30) as http:
        began = time.perf_counter()
        for _ in range(2):
            (
                await http.post(
                    "/chat/completions", json={"model": model, "messages": [{"role": "user", "content": "x"}]}
                )
            ).raise_for_status()
        return (time.perf_counter() - began) * 1000


def _sandbox_mib(directory: Path) -> float:
    """The resident memory of every process in the containers' cgroups."""
    host = ContainerHost.open(directory)
    total = 0.0
    for container_id in host.containers():
        cgroup = host.cgroup(container_id)
        for pid in cgroup.top.pids() if cgroup is not None else set():
            with contextlib.suppress(OSError):
                total += rss_mib(pid)
    return total


async def measure(calls: int = 40) -> str:
    backend = Backend.start(latency_ms=0)
    try:
        with tempfile.TemporaryDirectory(prefix="dr-bench-code-") as directory:
            dev = Dev.start(directory, backend, env={"SANDBOX_RUNTIME": "bubblewrap", "PROJECT_MAX_CONTAINERS": "200"})
            containers = Path(directory) / "containers"
            try:
                async with openai.AsyncOpenAI(base_url=f"{dev.url}/v1", api_key="bench", max_retries=0) as client:
                    direct = [await _backend_alone(backend) for _ in range(calls)]
                    plain = [await _plain_response(client, backend) for _ in range(calls)]
                    cold = [
                        await _code_response(client, backend, {"type": "auto"}, "print(1)")
                        for _ in range(max(10, calls // 4))
                    ]
                    warm_container = await client.containers.create(name="warm")
                    await _code_response(client, backend, warm_container.id, "print(1)")
                    warm = [await _code_response(client, backend, warm_container.id, "print(1)") for _ in range(calls)]
                    before = rss_mib(dev.process.pid)
                    made = [await client.containers.create(name=f"busy-{number}") for number in range(AT_ONCE)]
                    began = time.perf_counter()
                    busy = asyncio.gather(*(_code_response(client, backend, each.id, BUSY_CODE) for each in made))
                    await asyncio.sleep(2.0)
                    sandboxes = _sandbox_mib(containers)
                    each = await busy
                    wall = time.perf_counter() - began
                    server = rss_mib(dev.process.pid)
            finally:
                dev.stop()
                host = ContainerHost.open(containers)
                for container_id in host.containers():
                    await host.remove(container_id)
    finally:
        backend.stop()
    lines = [
        row(["code in a container (p50 / p95)", "time", "beside it"]),
        row(["---"] * 3),
        row(["backend alone: two chat completions", _times(direct), ""]),
        row(["a plain response (one completion, no tool)", _times(plain), ""]),
        row(
            [
                "cold container: a response whose first call is `print(1)`",
                _times(cold),
                f"+{statistics.median(cold) - statistics.median(plain):.0f} ms over a plain response",
            ]
        ),
        row(
            [
                "warm container: a response with one `print(1)`",
                _times(warm),
                f"+{statistics.median(warm) - statistics.median(plain):.0f} ms over a plain response",
            ]
        ),
        row(
            [
                f"{AT_ONCE} containers computing at once (numpy, 1 s sleep)",
                f"all done in {wall:.1f} s (each {statistics.median(each) / 1000:.1f} s p50)",
                f"sandboxes {sandboxes:.0f} MiB; server {before:.0f} → {server:.0f} MiB",
            ]
        ),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=40)
    print(asyncio.run(measure(parser.parse_args().calls)))


if __name__ == "__main__":
    main()
