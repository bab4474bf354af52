"""Health, the way orchestrators ask for it:

- `/livez`: the process answers (a restart mends nothing else);
- `/readyz`: it can do its work now: the store answers, Temporal answers, and a worker serves
  the task queue (a worker's own record in the store, at most 15 s old: true within seconds
  of the first worker starting, false within seconds of the last one stopping);
- `/health`: `/readyz`, as before.

Each check has a time limit, so a hung dependency makes the answer "unavailable", not slow.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from store.workers import ALIVE_WITHIN_SECONDS

log = logging.getLogger(__name__)

CHECK_SECONDS = 3.0


async def livez(_request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> JSONResponse:
    repository, runner = request.app.state.repository, request.app.state.runner

    async def workers() -> str | None:
        count = await repository.workers.alive(runner.task_queue, within_seconds=ALIVE_WITHIN_SECONDS)
        return None if count else "no worker serves the task queue"

    return await ready(
        {"store": repository.ping, "temporal": runner.temporal_answers, "worker": workers}, answering="api"
    )


async def ready(checks: dict[str, Callable[[], Awaitable[Any]]], *, answering: str | None = None) -> JSONResponse:
    """Runs the checks at once; each passes by returning None (or anything but a string that
    says what is wrong) within CHECK_SECONDS. `answering` names this process, "ok" as it answers."""
    names = list(checks)
    outcomes = await asyncio.gather(
        *(asyncio.wait_for(checks[name](), CHECK_SECONDS) for name in names), return_exceptions=True
    )
    results: dict[str, str] = {answering: "ok"} if answering else {}
    for name, outcome in zip(names, outcomes, strict=True):
        if isinstance(outcome, TimeoutError):
            results[name] = f"error: no answer within {CHECK_SECONDS:g} s"
        elif isinstance(outcome, BaseException):
            # The answer names the failure's kind only: its text can hold hosts, paths or
            # credentials of the store's URL. The log has it whole.
            log.warning("readiness check %r failed: %s: %s", name, type(outcome).__name__, outcome)
            results[name] = f"error: {type(outcome).__name__}"
        else:
            results[name] = outcome if isinstance(outcome, str) else "ok"
    healthy = all(value == "ok" for value in results.values())
    return JSONResponse({"status": "ok" if healthy else "unavailable", **results}, status_code=200 if healthy else 503)
