"""Serves the inbox's files, with a content security policy that lets the page load
only its own script and style and talk only to this server."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}
FILES = {
    "/inbox": ("inbox.html", "text/html; charset=utf-8"),
    "/inbox/inbox.js": ("inbox.js", "text/javascript; charset=utf-8"),
    "/inbox/inbox.css": ("inbox.css", "text/css; charset=utf-8"),
    "/inbox/inbox.svg": ("inbox.svg", "image/svg+xml"),
}


def _serving(name: str, media_type: str) -> Callable[[Request], Awaitable[Response]]:
    body = (resources.files("inbox") / "static" / name).read_bytes()

    async def serve(request: Request) -> Response:
        return Response(body, media_type=media_type, headers=SECURITY_HEADERS)

    return serve


def inbox_routes() -> list[Route]:
    return [Route(path, _serving(name, media_type), methods=["GET"]) for path, (name, media_type) in FILES.items()]
