"""What metrics cost one response, in this process: the access-log middleware around a request
and the recorders a streamed response calls (created, its first delta, each event a stream
sends, the model call, its end), timed over many repetitions against the same request
without them. Deterministic enough to tell microseconds apart, which an end-to-end A/B on a
shared machine cannot (its medians move by a millisecond from run to run).

    python -m bench.telemetry_cost
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from types import SimpleNamespace
from typing import Any

from telemetry import metrics
from telemetry.access_log import AccessLog
from telemetry.logs import JsonFormatter

EVENTS_PER_RESPONSE = 20
"""Events a short streamed answer sends (created, in progress, item and part events, deltas, end)."""


async def _answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
    scope["route"] = SimpleNamespace(path="/v1/responses")
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


async def _frames() -> Any:
    for _ in range(3):
        yield "event: response.in_progress\ndata: {}\n\n"
    yield "event: response.output_text.delta\ndata: {}\n\n"


async def _nothing(message: dict[str, Any]) -> None:
    pass


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _bare(scope: dict[str, Any]) -> None:
    await _answer(scope, _receive, _nothing)
    async for _ in _frames():
        pass


async def _measured(scope: dict[str, Any], app: AccessLog) -> None:
    await app(scope, _receive, _nothing)
    metrics.response_created("bench", stream=True, background=False)
    async for _ in metrics.first_delta_watch(_frames(), time.perf_counter(), "bench"):
        pass
    opened = int(time.time() * 1000)
    for _ in range(EVENTS_PER_RESPONSE):
        metrics.stream_event_sent(opened, opened)
    metrics.inference_succeeded("bench", 0.01, 10, 20)
    metrics.response_ended("bench", "completed")


async def _per_response_us(step: Any, repetitions: int) -> float:
    best = float("inf")
    for _ in range(5):  # the best of five rounds: the least disturbed by the rest of the machine
        started = time.perf_counter()
        for _ in range(repetitions):
            await step()
        best = min(best, (time.perf_counter() - started) / repetitions * 1e6)
    return best


async def measure(repetitions: int = 20_000) -> dict[str, float]:
    app = AccessLog(_answer)

    def scope() -> dict[str, Any]:
        return {"type": "http", "method": "POST", "path": "/v1/responses", "headers": []}

    bare = await _per_response_us(lambda: _bare(scope()), repetitions)
    measured = await _per_response_us(lambda: _measured(scope(), app), repetitions)
    # The same with the access line written (LOG_LEVEL=INFO, the default), to /dev/null.
    access = logging.getLogger("durable_responses.access")
    disabled = logging.root.manager.disable  # the bench turns INFO off for the MCP client's lines
    logging.disable(logging.NOTSET)
    with open(os.devnull, "w") as sink:
        handler = logging.StreamHandler(sink)
        handler.setFormatter(JsonFormatter())
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        propagated, access.propagate = access.propagate, False  # the line goes to the sink alone
        try:
            logged = await _per_response_us(lambda: _measured(scope(), app), repetitions)
        finally:
            access.removeHandler(handler)
            access.propagate = propagated
            logging.disable(disabled)
    return {"bare_us": bare, "metrics_us": measured - bare, "metrics_and_access_line_us": logged - bare}


def main() -> None:
    print(json.dumps(asyncio.run(measure())))


if __name__ == "__main__":
    main()
