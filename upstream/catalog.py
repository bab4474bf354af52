"""What `GET /v1/models` lists: the registry's model names; without a models file, the
backend's own list (fetched with its key, kept for `CACHE_SECONDS`); with the demo model, its
models. The key never leaves this module's request to the backend."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import httpx

from chat_completions.client import shown_url
from demo.backend import DEMO_BASE_URL
from demo.model import DEMO_MODELS
from models.errors import NotFoundError, UnavailableError
from models.model_objects import ModelObject
from upstream.registry import ANY_MODEL, ModelRegistry

log = logging.getLogger(__name__)

CACHE_SECONDS = 60.0
FETCH_TIMEOUT_SECONDS = 10.0
MAX_LISTED = 10_000


def _unavailable(api_base: str, what: str) -> UnavailableError:
    log.warning("the inference backend at %s: %s", shown_url(api_base), what)
    return UnavailableError(f"The inference backend's models cannot be listed: {what}.")


class ModelCatalog:
    def __init__(self, registry: ModelRegistry, clock: Callable[[], float] = time.time) -> None:
        self.registry = registry
        self.clock = clock
        self.started = int(clock())
        self._fetched: list[ModelObject] | None = None
        self._fetched_at = float("-inf")
        self._lock = asyncio.Lock()

    async def models(self) -> list[ModelObject]:
        if self.registry.from_file:
            by_name = {d.model_name: d for d in self.registry.deployments}
            return [
                ModelObject(id=name, created=self.started, owned_by=by_name[name].provider)
                for name in self.registry.names()
            ]
        backend = self.registry.deployments[0]
        if backend.api_base == DEMO_BASE_URL:
            return [ModelObject(id=name, created=self.started, owned_by="durable-responses") for name in DEMO_MODELS]
        async with self._lock:
            if self._fetched is None or self.clock() - self._fetched_at > CACHE_SECONDS:
                self._fetched = await self._fetch(backend.api_base, backend.api_key)
                self._fetched_at = self.clock()
            return self._fetched

    async def names(self) -> list[str]:
        """The names this server serves by name (what `upstream/known_models.py` learns): those
        listed, and what each `*` deployment's backend lists."""
        names = [each.id for each in await self.models()]
        if self.registry.from_file:
            for deployment in self.registry.deployments:
                if deployment.model_name == ANY_MODEL and deployment.api_base != DEMO_BASE_URL:
                    names += [each.id for each in await self._fetch(deployment.api_base, deployment.api_key)]
        return names

    async def model(self, model_id: str) -> ModelObject:
        for each in await self.models():
            if each.id == model_id:
                return each
        if (
            not self.registry.from_file
            and self.registry.knows(model_id)
            and self.registry.deployments[0].api_base != DEMO_BASE_URL
        ):
            # One backend serves every name; it may serve names its list does not show.
            return ModelObject(id=model_id, created=self.started, owned_by="upstream")
        raise NotFoundError(f"The model '{model_id}' does not exist", param="model", code="model_not_found")

    async def _fetch(self, api_base: str, api_key: str) -> list[ModelObject]:
        """The backend's list; `UnavailableError` says what failed but not where (a tenant reads
        it: the operator's log names the URL)."""
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        try:
            async with httpx.AsyncClient(timeout=FETCH_TIMEOUT_SECONDS) as http:
                answer = await http.get(f"{api_base.rstrip('/')}/models", headers=headers)
        except httpx.HTTPError as error:
            raise _unavailable(api_base, f"cannot list its models ({type(error).__name__})") from None
        if answer.status_code != 200:
            raise _unavailable(api_base, f"it answered {answer.status_code} to GET /models")
        try:
            listed = answer.json().get("data") or []
        except (ValueError, AttributeError):
            raise _unavailable(api_base, "it listed its models in a form not understood") from None
        models = []
        for entry in listed[:MAX_LISTED] if isinstance(listed, list) else []:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str):
                created = entry.get("created")
                models.append(
                    ModelObject(
                        id=entry["id"],
                        created=created if isinstance(created, int) else self.started,
                        owned_by=str(entry.get("owned_by") or "upstream"),
                    )
                )
        return models
