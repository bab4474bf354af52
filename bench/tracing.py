"""What tracing costs a response: non-streaming latency through three fresh `dev`s, one request
to each in turn (untraced, 10 % of traces sampled, every trace, exported to a stand-in OTLP
collector: `bench/otlp_sink.py`), and its rows beside the metrics' in-process cost
(`bench/telemetry_cost.py`)."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import openai

from bench import load
from bench.processes import Backend, Dev, start_otlp_sink
from bench.tables import ms, row


@dataclass(frozen=True)
class Tracing:
    labels: list[str]
    timings: list[list[float]]
    """Each setup's latencies, in the order of `labels` (the first untraced)."""
    exported: dict[str, Any]
    """What the stand-in collector received: `exports` and `bytes`."""


async def measure(backend: Backend, requests: int, warmup: int) -> Tracing:
    """Non-streaming latency through three fresh `dev`s, one request to each in turn: no
    tracing, 10 % of traces sampled, and all of them, exported to a stand-in collector."""
    sink, sink_url = start_otlp_sink()
    traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": sink_url, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio"}
    setups = [
        ("no tracing", {}),
        ("tracing, 10 % of traces sampled", traced | {"OTEL_TRACES_SAMPLER_ARG": "0.1"}),
        ("tracing, every trace", traced | {"OTEL_TRACES_SAMPLER_ARG": "1.0"}),
    ]
    devs: list[Dev] = []
    clients: list[openai.AsyncOpenAI] = []
    try:
        with tempfile.TemporaryDirectory(prefix="dr-bench-telemetry-") as root:
            for index, (_, env) in enumerate(setups):
                data_dir = os.path.join(root, str(index))
                os.mkdir(data_dir)
                devs.append(Dev.start(data_dir, backend, env))
                clients.append(
                    openai.AsyncOpenAI(base_url=f"{devs[-1].url}/v1", api_key="bench", max_retries=0, timeout=120)
                )
            calls = [_asking(client) for client in clients]
            timings = await load.rotating(calls, requests, warmup)
            for client in clients:
                await client.close()
    finally:
        for dev in devs:
            dev.stop()
        sink.terminate()
        out, _ = sink.communicate(timeout=10)
    exported: dict[str, Any] = json.loads(out.strip().splitlines()[-1]) if out.strip() else {"exports": 0, "bytes": 0}
    return Tracing([label for label, _ in setups], timings, exported)


def _asking(client: openai.AsyncOpenAI) -> Callable[[], Awaitable[object]]:
    """One non-streaming request to `client`'s server, again on each call."""
    return lambda: client.responses.create(model="bench", input="hi")


def rows(tracing: Tracing, metrics_cost: dict[str, float]) -> list[str]:
    """The telemetry table: each setup's latency and its cost over the untraced one, then the
    metrics' own cost per response."""
    untraced = statistics.median(tracing.timings[0])
    lines = [row(["telemetry (three fresh `dev`s in turn)", "p50", "p95", "p50 cost", "goal"]), row(["---"] * 5)]
    for label, samples in zip(tracing.labels, tracing.timings, strict=True):
        lines.append(
            row(
                [
                    label,
                    ms(statistics.median(samples)),
                    ms(load.percentile(samples, 0.95)),
                    f"{statistics.median(samples) - untraced:+.2f} ms",
                    "< +1 ms" if "10 %" in label else "",
                ]
            )
        )
    lines.append(
        row(
            [
                "metrics per response, in-process (access log middleware, recorders, 20 stream events)",
                f"{metrics_cost['metrics_us'] / 1000:.3f} ms",
                "",
                f"+{metrics_cost['metrics_and_access_line_us'] / 1000:.3f} ms with the access line",
                "< +1 ms",
            ]
        )
    )
    exported = tracing.exported
    lines.append(f"\nOTLP exports received: {exported['exports']} ({exported['bytes'] / 1024:.0f} KiB).")
    return lines
