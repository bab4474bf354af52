"""How the API's HTTP server is configured, in one place for `serve`, `dev` and the tests'
stacks: uvicorn without its signal handlers, a deadline for a request's headers, and idle
keep-alive connections held longer than clients hold theirs, and a server that wakes once a
second when idle, not ten times."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.types import ASGIApp

from http_plumbing.http_protocol import with_header_timeout

KEEP_ALIVE_SECONDS = 30
"""How long an idle keep-alive connection stays open. Longer than any common client keeps an
idle connection (httpx, and so the openai SDK: 5 s; Node's undici: 4 s; aiohttp: 15 s), so a
client always drops a connection before the server does. Were both 5 s (uvicorn's default),
a request sent on a connection in the instant the server closes it is lost with a connection
reset, which a client without retries (or any client, for a POST it will not repeat) sees as
an error."""


class ServerWithoutSignals(uvicorn.Server):
    """Signals belong to the CLI, which turns them into `stop`; uvicorn must not take them.

    (A uvicorn server in the main thread points SIGTERM and SIGINT at itself and puts back the
    handler it found when it stops; servers that start and stop in any order, as the tests'
    stacks do, can leave a stopped one's handler installed, which sse-starlette reads as a
    shutdown: it then ends every SSE response in the process before it is written.)"""

    TICK_SECONDS = 1.0
    """uvicorn looks at `should_exit` (and refreshes its `date` header) every 0.1 s: ten
    wake-ups a second, 0.5-1 % of a core of an idle `dev`. Here it looks once a second,
    its `date` still refreshed each time, and a stop wakes it at once."""

    def __init__(self, config: uvicorn.Config) -> None:
        self._exit_asked: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        super().__init__(config)

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        if value and self._exit_asked is not None:
            loop, asked = self._exit_asked
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing waits
                loop.call_soon_threadsafe(asked.set)

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def main_loop(self) -> None:
        asked = asyncio.Event()
        self._exit_asked = (asyncio.get_running_loop(), asked)
        ticks = 0
        while not await self.on_tick(ticks):
            ticks = (ticks + 10) % 864000  # uvicorn refreshes its date header on every tenth
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asked.wait(), self.TICK_SECONDS)


def api_server(
    app: ASGIApp, host: str, port: int, *, grace_seconds: float, header_timeout_seconds: float = 10.0
) -> ServerWithoutSignals:
    """An HTTP server for `app` on `host:port` (port 0: any free one)."""
    return ServerWithoutSignals(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            # uvicorn annotates an int, and waits any number of seconds: a grace of 0.5 s stays 0.5 s.
            timeout_graceful_shutdown=grace_seconds,  # type: ignore[arg-type]
            timeout_keep_alive=KEEP_ALIVE_SECONDS,
            http=with_header_timeout(header_timeout_seconds),
        )
    )
