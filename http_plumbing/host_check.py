"""The `Host` header must name this server (`ALLOWED_HOSTS`), so a web page whose name was
re-pointed at 127.0.0.1 (DNS rebinding) cannot talk to a loopback server. Refusals are 400s
in OpenAI's shape. Names match exactly (without the port), `*.example.com` matches any
subdomain, `*` matches anything."""

from __future__ import annotations

from typing import Any

from http_plumbing.errors import error_response
from models.errors import InvalidRequestError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def loopback(host: str) -> bool:
    return host in LOOPBACK_NAMES or host.startswith("127.")


def default_allowed_hosts(bind_host: str) -> list[str]:
    """A loopback server answers only to loopback names; one bound elsewhere, to any name
    (its keys guard it) unless ALLOWED_HOSTS says which."""
    return list(LOOPBACK_NAMES) if loopback(bind_host) else ["*"]


class HostCheck:
    def __init__(self, app: Any, allowed_hosts: list[str]) -> None:
        self.app = app
        self.any = "*" in allowed_hosts
        self.exact = {host.lower() for host in allowed_hosts if not host.startswith("*")}
        self.suffixes = tuple(host[1:].lower() for host in allowed_hosts if host.startswith("*."))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.any or scope["type"] not in ("http", "websocket") or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        refusal = InvalidRequestError(
            "Invalid Host header: this server does not answer to that name.", param="Host", code="invalid_host"
        )
        await error_response(refusal)(scope, receive, send)

    def _allowed(self, scope: dict[str, Any]) -> bool:
        header = next((value.decode("latin-1") for name, value in scope["headers"] if name == b"host"), "")
        host = header.lower()
        if host.startswith("["):  # [::1]:8000
            host = host[1:].split("]", 1)[0]
        elif host.count(":") == 1:
            host = host.split(":", 1)[0]
        return host in self.exact or (bool(self.suffixes) and host.endswith(self.suffixes))
