"""The WebSocket routes: `/v1/responses` (WebSocket mode), and every other path, whose
upgrade is refused saying why (as is every upgrade while `WEBSOCKET_MODE` is off)."""

from __future__ import annotations

from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket

from http_plumbing.errors import refuse_upgrade
from models.errors import NotFoundError, PermissionDeniedError
from websocket_mode.connection import Connection
from websocket_mode.responding import respond
from websocket_mode.settings import WebSocketSettings
from websocket_mode.steering import steer


async def responses_socket(websocket: WebSocket) -> None:
    settings: WebSocketSettings = websocket.app.state.websocket
    if not settings.enabled:
        await refuse_upgrade(
            websocket,
            PermissionDeniedError(
                "WebSocket mode is turned off on this server (WEBSOCKET_MODE=off); use POST /v1/responses."
            ),
        )
        return
    await Connection(websocket, settings).serve(respond, steer)


async def elsewhere(websocket: WebSocket) -> None:
    await refuse_upgrade(
        websocket,
        NotFoundError(
            f"No WebSocket is served at {websocket.url.path[:200]}: WebSocket mode is at /v1/responses.",
            code="websocket_not_served",
        ),
    )


def websocket_routes() -> list[WebSocketRoute]:
    return [WebSocketRoute("/v1/responses", responses_socket), WebSocketRoute("/{path:path}", elsewhere)]
