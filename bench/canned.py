"""What any Responses server costs a client before its first text delta: a canned server that
replays a real server's stream byte for byte, at once, measured by the same SDK client as the
real servers (`bench/load.py`'s `sdk_response_first_delta`). Its first delta is the floor under
everyone's: the client's own reading and validating of the opening events, their size and
their writes, with no server work at all.

    recorded = await record(url, body)       # one real stream: its headers and bytes
    with CannedServer(recorded) as canned:   # answers every POST with them
        ... canned.url ...
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

FIRST_DELTA = b"response.output_text.delta"


@dataclass(frozen=True)
class Recorded:
    content_type: str
    opening: bytes
    """The stream up to and including the first text delta's event."""
    rest: bytes


async def record(url: str, body: dict[str, Any]) -> Recorded:
    """One streamed response from a real server, as its bytes came."""
    received = bytearray()
    async with httpx.AsyncClient(timeout=60) as http, http.stream("POST", url, json=body) as answer:
        content_type = answer.headers.get("content-type", "text/event-stream")
        async for chunk in answer.aiter_raw():
            received += chunk
    at = received.find(FIRST_DELTA)
    if at < 0:
        raise AssertionError(f"no text delta in the stream from {url}")
    end = received.find(b"\n\n", at) + 2
    return Recorded(content_type, bytes(received[:end]), bytes(received[end:]))


class CannedServer:
    """An HTTP/1.1 server on the loopback (a thread of its own) answering every POST with the
    recorded stream: its opening and first delta in one write, then the rest."""

    def __init__(self, recorded: Recorded) -> None:
        self.recorded = recorded
        self.port = 0
        self._server: asyncio.Server | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> CannedServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._answer, "127.0.0.1", 0))
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        recorded = self.recorded
        head = (
            f"HTTP/1.1 200 OK\r\ncontent-type: {recorded.content_type}\r\ntransfer-encoding: chunked\r\n\r\n".encode()
        )
        try:
            while True:  # keep-alive: one stream per request
                request = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in request.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                opening = recorded.opening
                writer.write(head + b"%x\r\n" % len(opening) + opening + b"\r\n")
                await writer.drain()
                rest = recorded.rest
                writer.write((b"%x\r\n" % len(rest) + rest + b"\r\n" if rest else b"") + b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


async def floor_ms(url: str, model: str, requests: int, warmup: int) -> list[float]:
    """The canned floor: one stream of the server at `url` (its `/v1`) recorded, then replayed
    by a canned server to the openai SDK, timed to its first text delta `requests` times."""
    import openai

    from bench import load

    recorded = await record(f"{url}/responses", {"model": model, "input": "hi", "stream": True})
    with CannedServer(recorded) as canned:
        client = openai.AsyncOpenAI(base_url=canned.url, api_key="bench", max_retries=0, timeout=60)
        call = load.sdk_response_first_delta(client, model)
        try:
            samples = [await call() for _ in range(warmup + requests)]
        finally:
            await client.close()
    return samples[warmup:]
