"""How many tokens a model's input may take: its context window, or None when unknown.

Where it comes from, first found wins, per deployment that serves the model:
1. the models file: `model_info.max_input_tokens` (the demo model's own, without one);
2. a window learned from the backend's own refusal ("This model's maximum context length is
   N tokens", `context.overflow`), kept for the life of the process;
3. what the backend's `GET /models` says of the model: vLLM's `max_model_len`, or the
   `context_length` / `context_window` / `max_context_length` other servers use. The list is
   fetched beside the requests, never in their way: a request finds what the last fetch
   said (nothing, before the first), and a stale list (`REFRESH_SECONDS`; a failed fetch
   after `RETRY_SECONDS`) is fetched again in the background.
A model served by several deployments takes the smallest of their windows.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from upstream.registry import Deployment, ModelRegistry

REFRESH_SECONDS = 300.0
RETRY_SECONDS = 30.0
FETCH_TIMEOUT_SECONDS = 5.0
MAX_LISTED = 10_000
WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")


@dataclass
class _Listing:
    windows: dict[str, int] = field(default_factory=dict)
    fetched_at: float = float("-inf")
    ok: bool = False


class ContextWindows:
    def __init__(self, registry: ModelRegistry, clock: Callable[[], float] = time.monotonic) -> None:
        self.registry = registry
        self.clock = clock
        self._listings: dict[str, _Listing] = {}
        self._learned: dict[tuple[str, str], int] = {}
        self._fetching: dict[str, asyncio.Future[None]] = {}

    async def of(self, model: str) -> int | None:
        """The model's window in tokens (the smallest of its deployments'), or None."""
        windows = [
            window
            for deployment in self.registry.serving(model)
            for window in [await self.of_deployment(deployment, model)]
            if window
        ]
        return min(windows) if windows else None

    async def of_deployment(self, deployment: Deployment, model: str) -> int | None:
        if deployment.max_input_tokens:
            return deployment.max_input_tokens
        upstream = deployment.upstream_name(model)
        learned = self._learned.get((deployment.id, upstream))
        if learned:
            return learned
        listing = await self._listing(deployment)
        return listing.windows.get(upstream)

    def learn(self, deployment: Deployment, model: str, window: int) -> None:
        """The window a backend's refusal told of."""
        self._learned[(deployment.id, deployment.upstream_name(model))] = window

    async def _listing(self, deployment: Deployment) -> _Listing:
        """The backend's last fetched list (an empty one before the first fetch ends); a stale
        one is fetched again in the background."""
        listing = self._listings.get(deployment.api_base) or _Listing()
        fresh = self.clock() - listing.fetched_at < (REFRESH_SECONDS if listing.ok else RETRY_SECONDS)
        if not fresh and deployment.api_base not in self._fetching:
            task = asyncio.ensure_future(self._refresh(deployment))
            self._fetching[deployment.api_base] = task
            task.add_done_callback(lambda _: self._fetching.pop(deployment.api_base, None))
        return listing

    async def refreshed(self, model: str) -> None:
        """Until the lists of the model's backends are fetched (a process warming up; tests)."""
        for deployment in self.registry.serving(model):
            await self._listing(deployment)
            task = self._fetching.get(deployment.api_base)
            if task is not None:
                await asyncio.shield(task)

    async def _refresh(self, deployment: Deployment) -> None:
        self._listings[deployment.api_base] = await self._fetch(deployment)

    async def _fetch(self, deployment: Deployment) -> _Listing:
        headers = {"authorization": f"Bearer {deployment.api_key}"} if deployment.api_key else {}
        try:
            async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS) as http:
                answer = await http.get(f"{deployment.api_base}/models", headers=headers)
            listed = answer.json().get("data") if answer.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            listed = None
        if not isinstance(listed, list):
            return _Listing(fetched_at=self.clock())
        windows = {}
        for entry in listed[:MAX_LISTED]:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                window = next(
                    (
                        entry[key]
                        for key in WINDOW_KEYS
                        if isinstance(entry.get(key), int) and not isinstance(entry.get(key), bool) and entry[key] > 0
                    ),
                    None,
                )
                if window:
                    windows[entry["id"]] = window
        return _Listing(windows, self.clock(), ok=True)
