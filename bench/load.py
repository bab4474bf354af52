"""The shapes of load the benchmark applies, each returning raw samples in milliseconds."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, fields
from typing import Any

import httpx
import openai

Call = Callable[[], Awaitable[object]]
TimedCall = Callable[[], Awaitable[float]]
"""A call that times itself (to a first delta, say), in ms."""


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


async def timed(call: Call) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def alternating(direct: Call, durable: Call, count: int, warmup: int) -> tuple[list[float], list[float]]:
    """The backend alone and the same work through durable-responses, one after the other, so
    both see the same machine noise."""
    direct_ms, durable_ms = list[float](), list[float]()
    for index in range(warmup + count):
        a, b = await timed(direct), await timed(durable)
        if index >= warmup:
            direct_ms.append(a)
            durable_ms.append(b)
    return direct_ms, durable_ms


async def rotating(calls: list[Call], count: int, warmup: int) -> list[list[float]]:
    """Each call in turn, `count` times over (after `warmup` rounds): ms per call, by call."""
    timings: list[list[float]] = [[] for _ in calls]
    for index in range(warmup + count):
        for position, call in enumerate(calls):
            elapsed = await timed(call)
            if index >= warmup:
                timings[position].append(elapsed)
    return timings


def first_delta(http: httpx.AsyncClient, url: str, body: dict[str, Any], marker: str) -> TimedCall:
    """A call whose time is from sending the request to the first SSE data line holding `marker`
    (the rest of the stream is read afterwards, untimed, as a client would)."""

    async def call() -> float:
        started = time.perf_counter()
        async with http.stream("POST", url, json=body) as answer:
            lines = answer.aiter_lines()
            async for line in lines:
                if line.startswith("data: ") and marker in line:
                    elapsed = (time.perf_counter() - started) * 1000
                    async for _rest in lines:
                        pass
                    return elapsed
        raise AssertionError(f"no {marker} in the stream from {url}")

    return call


def backend_first_delta(http: httpx.AsyncClient, base_url: str) -> TimedCall:
    """The backend alone streaming its reply to "hi", timed to the reply's first text."""
    body = {"model": "bench", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    return first_delta(http, f"{base_url}/chat/completions", body, '"content": "echo')


def response_first_delta(http: httpx.AsyncClient, url: str, model: str = "bench") -> TimedCall:
    """A streamed response to "hi" created at `url` (a `/responses` route), timed to its
    first text delta."""
    return first_delta(http, url, {"model": model, "input": "hi", "stream": True}, "response.output_text.delta")


def sdk_backend_first_delta(client: Any, model: str = "bench") -> TimedCall:
    """The backend alone through the openai SDK's chat client (`chat.completions.create(stream=
    True)`), timed to the first chunk with content, as a client measures it."""

    async def call() -> float:
        started = time.perf_counter()
        elapsed = None
        stream = await client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "hi"}], stream=True
        )
        async for chunk in stream:
            if elapsed is None and chunk.choices and chunk.choices[0].delta.content:
                elapsed = (time.perf_counter() - started) * 1000
        if elapsed is None:
            raise AssertionError("no content in the backend's stream")
        return elapsed

    return call


def sdk_response_first_delta(client: Any, model: str = "bench") -> TimedCall:
    """A streamed response through the openai SDK (`responses.create(stream=True)`), timed to
    its first `response.output_text.delta` event: what a client sees, its reading and typing
    of the opening events included (the rest is read afterwards, untimed)."""

    async def call() -> float:
        started = time.perf_counter()
        elapsed = None
        stream = await client.responses.create(model=model, input="hi", stream=True)
        async for event in stream:
            if elapsed is None and event.type == "response.output_text.delta":
                elapsed = (time.perf_counter() - started) * 1000
        if elapsed is None:
            raise AssertionError("no text delta in the response's stream")
        return elapsed

    return call


class WebSocketFirstDelta:
    """Calls on one WebSocket connection (WebSocket mode: opened once, reused, as
    `client.responses.connect()` is): each sends a `response.create` and is timed to its
    first text delta (the rest of the response is read afterwards, untimed)."""

    def __init__(self, url: str, body: dict[str, Any]) -> None:
        self.url = url
        self.message = json.dumps({"type": "response.create", **body})
        self.connection: Any = None

    async def __call__(self) -> float:
        import websockets

        if self.connection is None:
            self.connection = await websockets.connect(self.url, max_size=None)
        started = time.perf_counter()
        await self.connection.send(self.message)
        elapsed = None
        while True:
            event = json.loads(await self.connection.recv())
            if elapsed is None and event["type"] == "response.output_text.delta":
                elapsed = (time.perf_counter() - started) * 1000
            if event["type"] in ("response.completed", "response.failed", "response.incomplete", "error"):
                if elapsed is None:
                    raise AssertionError(f"no text delta over the WebSocket at {self.url}: {event}")
                return elapsed

    async def close(self) -> None:
        if self.connection is not None:
            await self.connection.close()


async def alternating_first_delta(
    direct: TimedCall, durable: TimedCall, count: int, warmup: int
) -> tuple[list[float], list[float]]:
    direct_ms, durable_ms = [], []
    for index in range(warmup + count):
        a, b = await direct(), await durable()
        if index >= warmup:
            direct_ms.append(a)
            durable_ms.append(b)
    return direct_ms, durable_ms


@dataclass(frozen=True)
class ProcessCpu:
    """CPU time of each process on the machine a loaded run involves: seconds so far when read
    (`processes.cpu_reader`), or ms per response once a run's two readings are divided."""

    server: float = 0.0
    """The server measured (`dev`, or a peer)."""
    temporal: float = 0.0
    """`dev`'s Temporal server (a peer has none)."""
    load_generator: float = 0.0
    """This process: the client sending the load."""
    backend: float = 0.0
    """The scripted backend."""

    def per_response(self, later: ProcessCpu, responses: int) -> ProcessCpu:
        """From this reading to a later one, in ms per response."""
        return ProcessCpu(
            *(
                (getattr(later, each.name) - getattr(self, each.name)) / max(1, responses) * 1000
                for each in fields(self)
            )
        )


@dataclass
class Loaded:
    """What a concurrent run produced."""

    latencies_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    elapsed_s: float = 0.0
    statuses: Counter[str] = field(default_factory=Counter)
    cpu: ProcessCpu = field(default_factory=ProcessCpu)
    """CPU per response in ms in each process, when the run was given a reader."""

    @property
    def throughput(self) -> float:
        return len(self.latencies_ms) / self.elapsed_s if self.elapsed_s else 0.0

    @property
    def p50(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else float("nan")

    @property
    def p95(self) -> float:
        return percentile(self.latencies_ms, 0.95) if self.latencies_ms else float("nan")

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 0.99) if self.latencies_ms else float("nan")


async def concurrently(
    create: Callable[[], Awaitable[openai.types.responses.Response]],
    total: int,
    concurrency: int,
    cpu: Callable[[], ProcessCpu] | None = None,
) -> Loaded:
    """`total` responses, at most `concurrency` at once; an HTTP error is counted, not raised.
    With `cpu` (`processes.cpu_reader`), what each response cost each process."""
    loaded = Loaded()
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            started = time.perf_counter()
            try:
                response = await create()
            except openai.APIStatusError as error:
                loaded.errors[str(error.status_code)] += 1
                return
            except openai.APIError as error:
                loaded.errors[type(error).__name__] += 1
                return
            loaded.latencies_ms.append((time.perf_counter() - started) * 1000)
            loaded.statuses[response.status or "no status"] += 1

    started, before = time.perf_counter(), cpu() if cpu else None
    await asyncio.gather(*(one() for _ in range(total)))
    loaded.elapsed_s = time.perf_counter() - started
    if cpu and before:
        loaded.cpu = before.per_response(cpu(), len(loaded.latencies_ms))
    return loaded


async def chain(
    durable: openai.AsyncOpenAI, backend: httpx.AsyncClient, backend_url: str, model: str, turns: int
) -> tuple[list[float], list[float], list[str]]:
    """One `previous_response_id` chain of `turns` turns, each turn alternating with the backend
    alone given the same growing conversation (sent as plain JSON, so the client's own cost of
    a growing request does not count as the backend's); returns per-turn ms (direct, durable)
    and the response ids."""
    messages: list[dict[str, Any]] = []
    previous: str | None = None
    direct_ms, durable_ms, ids = [], [], []
    for turn in range(turns):
        text = f"turn {turn}: tell me more"
        messages.append({"role": "user", "content": text})
        started = time.perf_counter()
        completion = (
            await backend.post(f"{backend_url}/chat/completions", json={"model": model, "messages": messages})
        ).json()
        middle = time.perf_counter()
        response = await durable.responses.create(model=model, input=text, previous_response_id=previous)
        ended = time.perf_counter()
        messages.append({"role": "assistant", "content": completion["choices"][0]["message"]["content"]})
        direct_ms.append((middle - started) * 1000)
        durable_ms.append((ended - middle) * 1000)
        previous = response.id
        ids.append(response.id)
    return direct_ms, durable_ms, ids


def stored_bytes(database: str, response_id: str) -> int:
    """Bytes of every row the store keeps for one response, in every table that names it."""
    with sqlite3.connect(database) as connection:
        total = 0
        tables = [row[0] for row in connection.execute("select name from sqlite_master where type = 'table'")]
        for table in tables:
            columns = [row[1] for row in connection.execute(f"pragma table_info('{table}')")]
            key = "response_id" if "response_id" in columns else "id" if table == "responses" else None
            if key is None:
                continue
            lengths = " + ".join(f'coalesce(length(cast("{column}" as blob)), 0)' for column in columns)
            row = connection.execute(
                f'select sum({lengths}) from "{table}" where "{key}" = ?', (response_id,)
            ).fetchone()
            total += row[0] or 0
        return total
