"""One WebSocket connection: its reader (messages in, checked and rate-bounded), its writer
(one task, so events never interleave mid-frame), its lanes.

A lane is a `stream_id` (or none): its `response.create`s run one after another, first in
first out; lanes run side by side. A steer runs at once, beside the lanes. When the
connection ends (the client left, it idled, it lasted its most, its key was revoked), its
lanes stop following their responses, which go on: the event log has every event, for `GET
/v1/responses/{id}?stream=true&starting_after=`.

Its key is checked again before each `response.create` and `response.steer`, and every
`KEY_CHECK_SECONDS` while it is open: a revoked key's connection is closed (1008) within
seconds, as HTTP refuses it (the key ring is read again every two seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import orjson
from starlette.websockets import WebSocket, WebSocketDisconnect

from access.keys import KeyRing
from access.principal import Principal
from http_plumbing.body import Limits
from http_plumbing.params import principal
from models.errors import ApiError, InvalidRequestError, RateLimitedError, StoreUnavailableError, UnavailableError
from response_service.runner import ResponseRunner
from store.repository import ResponseRepository
from websocket_mode.client_events import ClientEventError, CreateEvent, SteerEvent, parse
from websocket_mode.held import HeldResponses
from websocket_mode.server_events import Event, error_event
from websocket_mode.settings import WebSocketSettings

log = logging.getLogger(__name__)

NORMAL, POLICY, TOO_BIG, GOING_AWAY = 1000, 1008, 1009, 1001

SERVER_ERROR = "The server had an error while processing your request."
STORE_DOWN = "The store is unavailable for a moment; retry the request."
WRITE_OUT_SECONDS = 5.0
"""How long a closing connection's queued events may take to be written."""
KEY_CHECK_SECONDS = 2.0
REVOKED = "this API key was revoked"


class Closing(Exception):
    """The server closes the connection: `code` and `reason` are sent with the close."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


class Lane:
    """A `stream_id`'s queue of `response.create`s, run one at a time by its own task."""

    def __init__(self, stream_id: str | None, run: Callable[[CreateEvent, Lane], Awaitable[None]]) -> None:
        self.stream_id = stream_id
        self.queue: asyncio.Queue[CreateEvent] = asyncio.Queue()
        self.busy = False
        self.task = asyncio.create_task(self._work(run))

    async def _work(self, run: Callable[[CreateEvent, Lane], Awaitable[None]]) -> None:
        while True:
            event = await self.queue.get()
            self.busy = True
            try:
                await run(event, self)
            except Exception:  # noqa: BLE001 - one response's trouble ends neither the lane nor the connection
                log.exception("a response on WebSocket lane %r failed", self.stream_id)
            finally:
                self.busy = self.queue.qsize() > 0


Respond = Callable[["Connection", CreateEvent, Lane], Coroutine[Any, Any, None]]
Steer = Callable[["Connection", SteerEvent], Coroutine[Any, Any, None]]


class Connection:
    def __init__(self, websocket: WebSocket, settings: WebSocketSettings) -> None:
        state = websocket.app.state
        self.websocket = websocket
        self.settings = settings
        self.acting: Principal = principal(websocket)
        self.repository: ResponseRepository = state.repository
        self.runner: ResponseRunner = state.runner
        self.limits: Limits = state.limits
        self.keys: KeyRing = state.keys
        self.held = HeldResponses(self.runner, self.repository.responses, settings.max_held_responses)
        self.lanes: dict[str | None, Lane] = {}
        self.lane_of: dict[str, str | None] = {}
        """Responses made or followed on this connection -> their lane."""
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue(settings.outbox_events)
        self.sequence = 0
        """Numbers the connection's own events (`error`, `response.steer.*`)."""
        self.told: set[str] = set()
        """Steers whose fate the client has been told."""
        self._tokens = float(settings.message_burst)
        self._counted_at = time.monotonic()
        self._steering: set[asyncio.Task[None]] = set()
        self.steer_order = asyncio.Lock()
        """Steers are taken one at a time, and a lane reads its response's steers between two."""

    async def serve(
        self,
        respond: Respond,
        steer: Steer,
    ) -> None:
        await self.websocket.accept()
        writer = asyncio.create_task(self._write())
        reading = asyncio.create_task(self._read(respond, steer))
        watching = asyncio.create_task(self._watch_key())
        closing = Closing(NORMAL, "")
        try:
            done, _ = await asyncio.wait(
                (reading, watching), timeout=self.settings.max_connection_seconds, return_when=asyncio.FIRST_COMPLETED
            )
            if not done:
                raise TimeoutError
            for task in done:
                task.result()
        except Closing as reason:
            closing = reason
        except TimeoutError:
            closing = Closing(GOING_AWAY, "connection lasted its most (WEBSOCKET_MAX_CONNECTION_SECONDS); reconnect")
        except WebSocketDisconnect:
            closing = Closing(0, "")
        finally:
            for task in (reading, watching):
                task.cancel()
            await asyncio.gather(reading, watching, return_exceptions=True)
            for task in [*(lane.task for lane in self.lanes.values()), *self._steering]:
                task.cancel()
            await asyncio.gather(*(lane.task for lane in self.lanes.values()), *self._steering, return_exceptions=True)
            try:  # what is queued is written first (a client that reads nothing more: at most 5 s)
                self.outbox.put_nowait(None)
                await asyncio.wait_for(writer, WRITE_OUT_SECONDS)
            except (asyncio.QueueFull, TimeoutError):
                writer.cancel()
            if closing.code:
                with contextlib.suppress(Exception):
                    await self.websocket.close(closing.code, closing.reason)
            await self.held.release_all()

    # ---- in ---------------------------------------------------------------------------

    async def _read(
        self,
        respond: Respond,
        steer: Steer,
    ) -> None:
        while True:
            message = await self._next_message()
            self._count_message()
            try:
                event = parse(message, self.limits)
            except ClientEventError as error:
                await self.send(error_event(error, error.stream_id))
                continue
            except InvalidRequestError as error:
                await self.send(error_event(error))
                continue
            if await self._revoked():
                raise Closing(POLICY, REVOKED)
            if isinstance(event, SteerEvent):
                task = asyncio.create_task(self._answered(self._in_order(steer(self, event)), stream_id=None))
                self._steering.add(task)
                task.add_done_callback(self._steering.discard)
                continue
            lane = self.lanes.get(event.stream_id)
            if lane is None:
                if len(self.lanes) >= self.settings.max_lanes:
                    await self.send(
                        error_event(
                            InvalidRequestError(
                                f"This connection has {len(self.lanes)} lanes, as many as it may; reuse a `stream_id`.",
                                param="stream_id",
                                code="invalid_value",
                            ),
                            event.stream_id,
                        )
                    )
                    continue
                lane = self.lanes[event.stream_id] = Lane(
                    event.stream_id, lambda created, on: self._answered(respond(self, created, on), on.stream_id)
                )
            waiting = sum(other.queue.qsize() for other in self.lanes.values())
            if waiting >= self.settings.max_waiting_creates:
                refused = RateLimitedError(
                    f"This connection has {waiting} `response.create`s waiting for their lanes, as many as it may; "
                    "send more once some have started."
                )
                await self.send(error_event(refused, event.stream_id))
                continue
            lane.busy = True
            lane.queue.put_nowait(event)

    async def _watch_key(self) -> None:
        """Close the connection once its key is revoked (it may be idle, or only reading)."""
        while True:
            await asyncio.sleep(KEY_CHECK_SECONDS)
            if await self._revoked():
                raise Closing(POLICY, REVOKED)

    async def _revoked(self) -> bool:
        """Whether the key is revoked, as the keys last read say: a store that cannot be read
        for a moment closes no connection (the keys are read again at the next check)."""
        try:
            return await self.keys.revoked(self.acting)
        except StoreUnavailableError as error:
            log.warning("the keys could not be read again (%s): the connection goes on", error)
            return False

    async def _next_message(self) -> str | bytes:
        """The next text or bytes; closes a connection idle past its bound, or one whose
        message is larger than a request body may be."""
        while True:
            try:
                message = await asyncio.wait_for(self.websocket.receive(), self.settings.idle_seconds)
            except TimeoutError:
                if any(lane.busy for lane in self.lanes.values()) or self._steering:
                    continue
                raise Closing(NORMAL, f"idle for {self.settings.idle_seconds:g} s (WEBSOCKET_IDLE_SECONDS)") from None
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000))
            data: str | bytes | None = message.get("text")
            if data is None:
                data = message.get("bytes") or b""
            if len(data) > self.limits.max_request_bytes:
                raise Closing(TOO_BIG, f"message larger than {self.limits.max_request_bytes} bytes (MAX_REQUEST_BYTES)")
            return data

    def _count_message(self) -> None:
        """A token bucket: a client may send `messages_per_second`, in bursts of `message_burst`."""
        now = time.monotonic()
        rate = self.settings.messages_per_second
        self._tokens = min(float(self.settings.message_burst), self._tokens + (now - self._counted_at) * rate)
        self._counted_at = now
        if self._tokens < 1:
            raise Closing(POLICY, f"more than {rate:g} messages a second (WEBSOCKET_MESSAGES_PER_SECOND)")
        self._tokens -= 1

    async def _in_order(self, work: Coroutine[Any, Any, None]) -> None:
        """Steers are taken one at a time, in the order they came (a successor's input keeps it)."""
        async with self.steer_order:
            await work

    async def _answered(self, work: Coroutine[Any, Any, None], stream_id: str | None) -> None:
        """Run a message's work; what it could not do is told as an `error` event, as HTTP
        would have answered (a store that is down: 503; anything else: 500, logged)."""
        try:
            await work
        except ApiError as error:
            await self.send(error_event(error, stream_id))
        except StoreUnavailableError as error:
            log.warning("store unavailable: %s", error)
            await self.send(error_event(UnavailableError(STORE_DOWN, code="store_unavailable"), stream_id))
        except Exception:  # noqa: BLE001 - the client is told; the log has what happened
            log.exception("a WebSocket message failed")
            await self.send(error_event(ApiError(SERVER_ERROR), stream_id))

    # ---- out --------------------------------------------------------------------------

    async def send(self, event: Event) -> None:
        """One of the connection's own events, numbered in the connection's sequence."""
        self.sequence += 1
        await self.outbox.put(orjson.dumps({"sequence_number": self.sequence} | event).decode())

    async def send_text(self, text: str) -> None:
        """A logged event, as its log has it."""
        await self.outbox.put(text)

    async def _write(self) -> None:
        while (text := await self.outbox.get()) is not None:
            try:
                await self.websocket.send_text(text)
            except Exception:  # noqa: BLE001 - the client is gone: the reader ends the connection
                return
