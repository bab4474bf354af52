"""The door before the routes: who a request acts for (its API key's project, or `OPEN`
while no key exists), what an approver key may do, and the per-key limits. Pure ASGI, so a
request costs a header lookup, a hash and a dict lookup.

It also runs, when the request's ASGI call ends however it ends, what routes registered in
`scope["state"]["at_end"]`: a stream's slot is given back there, not in its generator, which
never runs its `finally` when the client leaves before the first frame."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from starlette.websockets import WebSocket

from access.keys import KeyRing
from access.principal import OPEN, Principal
from access.quotas import Quotas
from http_plumbing.errors import error_response, refuse_upgrade
from models.errors import ApiError, AuthenticationError, PermissionDeniedError

GUARDED_PREFIX = "/v1/"
APPROVER_MAY = (
    ("GET", re.compile(r"^/v1/responses/[^/]+$")),
    ("POST", re.compile(r"^/v1/responses/[^/]+/approvals$")),
    ("GET", re.compile(r"^/v1/approvals$")),
)
DECISION = re.compile(r"^/v1/responses/[^/]+/approvals$")
"""An approval decision is never refused for the requests its key has open: it is the work that
lets a waiting response drain (a burst of them, waiting, would otherwise keep it out). It is
counted apart, against the same bound, and takes its place in the key's rate."""


class AccessMiddleware:
    def __init__(self, app: Any, ring: KeyRing, quotas: Quotas) -> None:
        self.app = app
        self.ring = ring
        self.quotas = quotas

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or not scope["path"].startswith(GUARDED_PREFIX):
            await self.app(scope, receive, send)
            return
        # A WebSocket counts as one of its key's sockets for as long as it is open (bounded as its
        # streams are); its `response.create`s count against the key's limits one by one besides
        # (`websocket_mode/responding.py`), as HTTP requests do.
        socket = scope["type"] == "websocket"
        if socket:
            enter, leave = self.quotas.open_socket, self.quotas.close_socket
        elif scope.get("method") == "POST" and DECISION.match(scope["path"]):
            enter, leave = self.quotas.enter_decision, self.quotas.leave_decision
        else:
            enter, leave = self.quotas.enter, self.quotas.leave
        try:
            principal = await self._principal(scope)
            enter(principal.limit_key)
        except ApiError as error:
            if scope["type"] == "http":
                await error_response(error)(scope, receive, send)
            else:
                await refuse_upgrade(WebSocket(scope, receive, send), error)
            return
        state = scope.setdefault("state", {})
        state["principal"] = principal
        state["at_end"] = at_end = list[Callable[[], None]]()
        try:
            await self.app(scope, receive, send)
        finally:
            leave(principal.limit_key)
            for release in at_end:  # what routes took for the whole request (a stream's slot)
                release()

    async def _principal(self, scope: dict[str, Any]) -> Principal:
        if not await self.ring.closed():
            return OPEN
        key = _bearer(scope)
        if key is None:
            raise AuthenticationError(
                "You didn't provide an API key. You need to provide your API key in an Authorization header "
                "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            )
        record = await self.ring.find(key)
        if record is None:
            raise AuthenticationError("Incorrect API key provided.", code="invalid_api_key")
        principal = record.principal()
        if principal.approver and not any(
            method == scope.get("method", "GET") and scope["type"] == "http" and path.match(scope["path"])
            for method, path in APPROVER_MAY
        ):
            raise PermissionDeniedError(
                "This is an approver key: it may read its project's responses that wait for an approval "
                "(GET /v1/responses/{id}), list the approvals waiting (GET /v1/approvals) and decide them "
                "(POST /v1/responses/{id}/approvals), nothing else."
            )
        return principal


def _bearer(scope: dict[str, Any]) -> str | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, credentials = value.decode("latin-1").partition(" ")
            credentials = credentials.strip()
            return credentials if scheme.lower() == "bearer" and credentials else None
    return None
