"""The access log and the HTTP metrics: one line per request when its answer has ended (a
stream's whole length), with method, route template, status and duration; a refused request
(4xx) also names the error code and parameter from its OpenAI-shaped body, so a client's 400
can be traced from the server. Paths are logged as their route template, never with ids or
query strings, and nothing of a request's body is."""

from __future__ import annotations

import json
import logging
import re
import time
from typing import Any

from telemetry import metrics

log = logging.getLogger("durable_responses.access")

ERROR_BODY_BYTES = 4096
"""How much of a refused request's answer is read for its error code (they are small)."""

UNROUTED = "(unrouted)"

QUIET_ROUTES = frozenset({"/livez", "/readyz", "/health", "/metrics"})
"""Probes and scrapes, every few seconds: counted, not logged."""


class AccessLog:
    """Outermost ASGI middleware of the API (and the worker's health port)."""

    def __init__(self, app: Any, *, enabled: bool = True) -> None:
        self.app = app
        self.enabled = enabled

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        error_body = bytearray()

        async def sending(message: dict[str, Any]) -> None:
            """An upgrade's status: 101 once accepted, its answer's when refused (403 when
            closed before it was accepted)."""
            nonlocal status
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start"):
                status = message["status"]
            elif kind == "websocket.accept":
                status = 101
            elif kind == "websocket.close" and status == 500:
                status = 403
            elif kind.endswith("response.body") and status >= 400 and len(error_body) < ERROR_BODY_BYTES:
                error_body.extend(message.get("body", b"")[: ERROR_BODY_BYTES - len(error_body)])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._record(scope, status, time.perf_counter() - started, bytes(error_body))

    def _record(self, scope: dict[str, Any], status: int, seconds: float, error_body: bytes) -> None:
        route = getattr(scope.get("route"), "path", None) or UNROUTED
        method = scope["method"] if scope["type"] == "http" else "WEBSOCKET"
        metrics.http_requests.labels(method, route, str(status)).inc()
        metrics.http_duration.labels(method, route).observe(seconds)
        if not self.enabled or route in QUIET_ROUTES:
            return
        fields: dict[str, Any] = {
            "method": method,
            "route": route,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
        }
        principal = (scope.get("state") or {}).get("principal")
        if principal is not None and principal.key_id:
            fields["key_id"] = principal.key_id
        response_id = (scope.get("path_params") or {}).get("response_id")
        if response_id:
            fields["response_id"] = response_id
        line = f"{method} {route} {status} {fields['duration_ms']:g} ms"
        if status >= 400:
            code, param = _error_of(error_body)
            fields |= {"error_code": code, "param": param}
            line += f" error={code}" + (f" param={param}" if param else "")
        log.info("%s", line, extra=fields)


_PARAMETER_PATH = re.compile(r"[a-z_]{1,40}(\[\d{1,6}\])?(\.[a-z_]{1,40}(\[\d{1,6}\])?){0,6}")


def _error_of(body: bytes) -> tuple[str, str | None]:
    """The `code` (else `type`) and `param` of an OpenAI-shaped error body. The param of an
    unknown parameter is the client's own text, so it is not logged; nor is any param that
    is not a plain path of parameter names (`tools[2].server_url`)."""
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return "error", None
    code = str(error.get("code") or error.get("type") or "error")
    param = error.get("param")
    if code == "unknown_parameter" or not isinstance(param, str) or not _PARAMETER_PATH.fullmatch(param):
        return code, None
    return code, param
