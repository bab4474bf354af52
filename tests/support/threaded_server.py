"""An ASGI app served by uvicorn in a thread of its own, with its own event loop: the test
doubles (scripted backend, MCP servers) keep answering whatever the test's loop does."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import uvicorn


class ThreadedServer:
    def __init__(
        self, app: Callable[..., Any], name: str, port: int = 0, host: str = "127.0.0.1", **config: Any
    ) -> None:
        """`app`: any ASGI app; `config`: uvicorn's settings besides host, port and log level."""
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", **config))
        self._thread = threading.Thread(target=self._server.run, name=name, daemon=True)
        self.port = 0

    def start(self) -> ThreadedServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self._thread.name} did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self, join_seconds: float = 0) -> None:
        self._server.should_exit = True
        if join_seconds:
            self._thread.join(timeout=join_seconds)
