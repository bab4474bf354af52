"""The HTTP response of a server-sent event stream (`http_plumbing/sse.py` makes its frames).

It differs from Starlette's `StreamingResponse` in three ways, all for the first token:
- It may wait before it opens (`ready`): a new response's stream may begin only once its
  start is acknowledged or its first turn's call has logged an event
  (`response_service/starting.py`). The route returns at once, and the stream waits here, in
  the request's own task, with its tail made: when the event comes, the stream opens and
  sends it in the same turn of the loop. Had the route waited, the event would wait for the
  route's return through the middleware, then for a task to stream in. Whatever `ready`
  raises is answered as the route's error would be: nothing has been sent yet.
- It says when its first frames are sent (`sent_first`, called once, also when it ends
  without any): a new response's start waits for that (`response_service/runner.py`).
- It streams in the request's task, and a task of its own only listens for the client
  leaving, then stops the stream. That is what Starlette does for a server of ASGI spec 2.4,
  where a send to a client gone raises; uvicorn's HTTP is 2.3, and Starlette streams there
  in a new task.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

from starlette.responses import Response
from starlette.types import Receive, Scope, Send


class EventStream(Response):
    media_type = "text/event-stream"

    def __init__(
        self,
        frames: AsyncIterator[str],
        *,
        headers: Mapping[str, str],
        ready: Callable[[], Awaitable[None]] | None = None,
        sent_first: Callable[[], None] | None = None,
    ) -> None:
        self.frames = frames
        self.ready = ready
        self.sent_first = sent_first
        self.status_code = 200
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._stream(receive, send)
        finally:
            self._first_sent()

    async def _stream(self, receive: Receive, send: Send) -> None:
        if self.ready is not None:
            await self.ready()  # not yet listening for the client: its leaving must not stop the start
        streaming = asyncio.current_task()
        assert streaming is not None
        ended = False

        def stop_streaming(listened: asyncio.Future[None]) -> None:
            if not ended and not listened.cancelled():
                streaming.cancel()

        left = asyncio.ensure_future(_client_left(receive))
        left.add_done_callback(stop_streaming)
        try:
            await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
            async for frames in self.frames:
                await send({"type": "http.response.body", "body": frames.encode(), "more_body": True})
                self._first_sent()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not left.done() or left.cancelled() or streaming.uncancel() > 0:
                raise  # not (only) the client leaving: the server stops
        finally:
            ended = True
            left.cancel()
            await _closed(self.frames)

    def _first_sent(self) -> None:
        """`sent_first`, once: after the first frames are sent, or as the stream ends without."""
        if self.sent_first is not None:
            sent_first, self.sent_first = self.sent_first, None
            sent_first()


async def _client_left(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _closed(frames: AsyncIterator[str]) -> None:
    """The frames' generator closed in this task, so its `finally` runs now, not at collection."""
    close = getattr(frames, "aclose", None)
    if close is not None:
        await close()
