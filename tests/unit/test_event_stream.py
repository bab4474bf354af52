"""`EventStream` says once when its first frames are sent: a new response's start waits for it
(`response_service/runner.py`), so it must come after the first frames, and come whatever
ends the stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from http_plumbing.event_stream import EventStream


class Client:
    """The ASGI side of one request: what was sent, and a disconnect when `leave` is called."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.calls: list[list[dict[str, Any]]] = []
        self.left = asyncio.Event()

    async def receive(self) -> dict[str, Any]:
        await self.left.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)

    def sent_first(self) -> None:
        self.calls.append(list(self.sent))  # what had been sent when it was called

    def bodies(self, sent: list[dict[str, Any]]) -> list[bytes]:
        return [message["body"] for message in sent if message["type"] == "http.response.body"]


async def _frames(*texts: str, then: asyncio.Event | None = None) -> AsyncIterator[str]:
    for text in texts:
        yield text
    if then is not None:
        await then.wait()


async def _streamed(stream: EventStream, client: Client) -> None:
    await stream({"type": "http"}, client.receive, client.send)


async def test_it_is_called_once_after_the_first_frames_are_sent():
    client = Client()
    stream = EventStream(_frames("a", "b", "c"), headers={}, sent_first=client.sent_first)
    await _streamed(stream, client)
    assert len(client.calls) == 1
    assert client.bodies(client.calls[0]) == [b"a"]
    assert client.bodies(client.sent) == [b"a", b"b", b"c", b""]


async def test_it_is_called_when_the_stream_ends_without_a_frame():
    client = Client()
    await _streamed(EventStream(_frames(), headers={}, sent_first=client.sent_first), client)
    assert len(client.calls) == 1 and client.bodies(client.calls[0]) == [b""]  # the end, and nothing before


async def test_it_is_called_when_ready_fails():
    client = Client()

    async def refused() -> None:
        raise RuntimeError("the start failed")

    stream = EventStream(_frames("a"), headers={}, ready=refused, sent_first=client.sent_first)
    with pytest.raises(RuntimeError):
        await _streamed(stream, client)
    assert len(client.calls) == 1 and client.sent == []


async def test_it_is_called_when_the_stream_is_stopped_before_a_frame():
    client = Client()
    never = asyncio.Event()
    streaming = asyncio.ensure_future(
        _streamed(EventStream(_frames(then=never), headers={}, sent_first=client.sent_first), client)
    )
    await asyncio.sleep(0.01)
    assert client.calls == []  # headers only: nothing of the response's yet
    streaming.cancel()
    with pytest.raises(asyncio.CancelledError):
        await streaming
    assert len(client.calls) == 1 and client.bodies(client.calls[0]) == []
