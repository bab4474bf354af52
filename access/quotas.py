"""Quotas, in one place: what one key may do at once, and what one project may keep.

- **Per key** (`Quotas`): how many requests one key may have open at once, how many streams,
  and (when set) how many requests a minute. Past a limit a request gets a 429 in OpenAI's
  shape with `retry-after`, before anything is read or stored. While the server runs open,
  every request counts against one shared key.
- **Per project** (`QuotaSettings.project`, `models/quotas.py`): files, their bytes, vector
  stores, files in one store, webhook endpoints. The store checks them where it adds
  (`store/quota.py`); past one, a 400 `limit_exceeded` names it.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field

from models.errors import RateLimitedError
from models.quotas import ProjectQuotas


@dataclass(frozen=True)
class QuotaSettings:
    max_in_flight_per_key: int = 200
    max_streams_per_key: int = 100
    requests_per_minute: int = 0
    """0: no rate limit."""
    project: ProjectQuotas = field(default_factory=ProjectQuotas)


class Quotas:
    def __init__(self, settings: QuotaSettings) -> None:
        self.settings = settings
        self._in_flight: dict[str, int] = defaultdict(int)
        self._streams: dict[str, int] = defaultdict(int)
        self._sockets: dict[str, int] = defaultdict(int)
        self._decisions: dict[str, int] = defaultdict(int)
        self._buckets: dict[str, tuple[float, float]] = {}
        """key -> (tokens, when counted): a token bucket as big as a minute's requests."""

    def enter(self, key: str) -> None:
        """A request of `key` begins (refused past the key's rate or concurrency)."""
        self.take_token(key)
        _count_in(self._in_flight, key, self.settings.max_in_flight_per_key, "requests", "MAX_INFLIGHT_PER_KEY")

    def leave(self, key: str) -> None:
        _count_out(self._in_flight, key)

    def enter_decision(self, key: str) -> None:
        """An approval decision of `key` begins: within its rate, and counted apart from its
        requests (against the same bound), so its open responses never keep a decision out."""
        self.take_token(key)
        _count_in(
            self._decisions, key, self.settings.max_in_flight_per_key, "approval decisions", "MAX_INFLIGHT_PER_KEY"
        )

    def leave_decision(self, key: str) -> None:
        _count_out(self._decisions, key)

    def open_stream(self, key: str) -> None:
        _count_in(self._streams, key, self.settings.max_streams_per_key, "streams", "MAX_STREAMS_PER_KEY")

    def close_stream(self, key: str) -> None:
        _count_out(self._streams, key)

    def open_socket(self, key: str) -> None:
        """A WebSocket of `key` opens: counted apart from its requests (each `response.create`
        on it counts as one), against the same bound as its streams."""
        _count_in(self._sockets, key, self.settings.max_streams_per_key, "WebSockets", "MAX_STREAMS_PER_KEY")

    def close_socket(self, key: str) -> None:
        _count_out(self._sockets, key)

    def take_token(self, key: str) -> None:
        """A request of `key` within its rate (refused past it), not counted as open."""
        rate = self.settings.requests_per_minute
        if not rate:
            return
        now = time.monotonic()
        tokens, then = self._buckets.get(key, (float(rate), now))
        tokens = min(float(rate), tokens + (now - then) * rate / 60)
        if tokens < 1:
            self._buckets[key] = (tokens, now)
            wait = math.ceil((1 - tokens) * 60 / rate)
            raise RateLimitedError(
                f"This API key made more than {rate} requests a minute (RATE_LIMIT_PER_MINUTE); retry in {wait} s.",
                retry_after_seconds=wait,
            )
        self._buckets[key] = (tokens - 1, now)


def _count_in(counts: dict[str, int], key: str, limit: int, what: str, setting: str) -> None:
    if counts[key] >= limit:
        raise RateLimitedError(
            f"This API key (on a server with no keys, all requests together) has {counts[key]} {what} open, as "
            f"many as it may ({setting}); retry when one has ended."
        )
    counts[key] += 1


def _count_out(counts: dict[str, int], key: str) -> None:
    counts[key] -= 1
    if not counts[key]:
        del counts[key]
