"""What a WebSocket connection may do (`serve` and `dev` read them from the environment)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class WebSocketSettings:
    enabled: bool = True
    """`WEBSOCKET_MODE`: off refuses every upgrade, saying so."""
    idle_seconds: float = 300.0
    """`WEBSOCKET_IDLE_SECONDS`: a connection with nothing running that sends nothing this
    long is closed."""
    max_connection_seconds: float = 3600.0
    """`WEBSOCKET_MAX_CONNECTION_SECONDS`: how long one connection lasts (OpenAI's: 60 min);
    its responses go on, and a client resumes them from the event log."""
    messages_per_second: float = 100.0
    """`WEBSOCKET_MESSAGES_PER_SECOND`: a connection that sends faster, past a burst of
    `message_burst`, is closed (each `response.create` counts against the key's limits too)."""
    message_burst: int = 200
    max_waiting_creates: int = 32
    """`response.create`s one connection may have waiting for their lanes (each holds its
    body); past it, one is refused with a 429 `error` event."""
    max_lanes: int = 32
    """Lanes (`stream_id`s) one connection may have at once."""
    max_held_responses: int = 64
    """Unstored responses (`store: false`) one connection holds for `previous_response_id`;
    past it the oldest that ended is let go."""
    outbox_events: int = 1024
    """Events waiting to be written to a slow client before its lanes wait for it."""
