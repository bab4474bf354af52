"""One chat-completions client per deployment, made on first use and closed together."""

from __future__ import annotations

from chat_completions.client import ChatBackend, ChatClient
from demo.backend import DEMO_BASE_URL, DemoBackend
from upstream.registry import Deployment

DEFAULT_TIMEOUT_SECONDS = 600.0


class Upstreams:
    def __init__(self, default_timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS) -> None:
        self.default_timeout_seconds = default_timeout_seconds
        self._clients: dict[str, ChatBackend] = {}

    def client(self, deployment: Deployment) -> ChatBackend:
        client = self._clients.get(deployment.id)
        if client is None:
            if deployment.api_base == DEMO_BASE_URL:
                client = DemoBackend()
            else:  # Temporal owns retries: the client never retries on its own
                client = ChatClient(
                    deployment.api_base,
                    deployment.api_key,
                    timeout_seconds=deployment.timeout_seconds or self.default_timeout_seconds,
                    name=deployment.described,
                )
            self._clients[deployment.id] = client
        return client

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
