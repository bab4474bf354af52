"""A response kept and its workflow started: what the create routes (`/v1/responses`, the
compact and input-token endpoints, WebSocket mode's `response.create`) share.

`kept_and_launched` keeps the response in the store and launches its start (and, where this
process has a worker, its first turn beside it: `activities/early_calls.py`); `settled` waits
for Temporal's acknowledgement, and removes what was kept if the start fails.
`streams_before_start` says whether a stream may begin before that acknowledgement: once the
early call has logged an event, the response exists for good (a stored response whose start
failed is started by the orphan sweep), so its client is sent it at once
(`docs/architecture.md`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from starlette.requests import HTTPConnection

from access.principal import Principal
from http_plumbing.params import repository as _repository
from models.events import opening_events
from response_service import code_containers
from response_service.preparation import PreparedResponse
from response_service.runner import Launch, ResponseRunner, Started
from store.event_log import EventLog
from telemetry import metrics

log = logging.getLogger(__name__)


def _runner(request: HTTPConnection) -> ResponseRunner:
    found: ResponseRunner = request.app.state.runner
    return found


@dataclass(frozen=True)
class Launched:
    response_id: str
    launch: Launch
    made: list[str]
    """The containers made for the response (removed with it if its start fails)."""
    opened_through: int
    """The sequence number of the last event kept with the response (its log's opening; -1 for
    a response that emits no events: it has none)."""


_SETTLING: set[asyncio.Future[Started]] = set()
"""Starts that settle behind a stream already under way (kept from the garbage collector)."""


def settle_later(request: HTTPConnection, prepared: PreparedResponse, launched: Launched) -> None:
    """`settled`, behind a stream already under way: its failure is logged there, never raised."""
    start = asyncio.ensure_future(settled(request, prepared, launched))
    _SETTLING.add(start)
    start.add_done_callback(_SETTLING.discard)
    start.add_done_callback(lambda done: done.cancelled() or done.exception())


async def streams_before_start(log: EventLog, launched: Launched) -> bool:
    """Whether a stream begins before its start is acknowledged: the first turn's call began
    beside the start and logged an event first. The response is in the store by then, and a
    stored response is started by the orphan sweep if its start fails, so what a client is
    sent then is of a response that completes (`docs/architecture.md`)."""
    launch = launched.launch
    if launch.early is None:
        return False
    while not launch.starting.done():
        waiter = log.notifier.subscribe(launched.response_id)
        try:
            if await log.read(launched.response_id, after=launched.opened_through, limit=1):
                launch.shown = not launch.starting.done()
                return launch.shown
            if launch.early.done():
                return False  # it ended without a word (it failed): the start decides
            racing: set[asyncio.Future[Any]] = {launch.starting, waiter.future, launch.early}
            await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
        finally:
            log.notifier.unsubscribe(launched.response_id, waiter)
    return False


async def ready_to_stream(request: HTTPConnection, prepared: PreparedResponse, launched: Launched) -> None:
    """Until a launched response's stream may begin: its start acknowledged, or its first
    turn's call has logged an event first (`streams_before_start`), and the start settles
    behind the stream."""
    if await streams_before_start(_repository(request).events, launched):
        settle_later(request, prepared, launched)  # the stream goes on whatever the start's outcome
    else:
        await settled(request, prepared, launched)


async def kept_and_started(request: HTTPConnection, prepared: PreparedResponse, acting: Principal) -> Started:
    """The response kept in the store and its workflow started (or nothing left behind)."""
    return await settled(request, prepared, await kept_and_launched(request, prepared, acting))


async def settled(request: HTTPConnection, prepared: PreparedResponse, launched: Launched) -> Started:
    """The launched response's start, acknowledged; a start that fails leaves nothing behind,
    unless a client was already sent the response's first events (then the sweep starts it)."""
    repository, response = _repository(request), prepared.response
    try:
        started = await launched.launch.starting
    except asyncio.CancelledError:
        raise  # the client left: the orphan sweep starts the response if its start did not reach Temporal
    except BaseException as error:
        if launched.launch.shown:
            log.warning(
                "response %s streams, but its start failed (%s): the orphan sweep starts it", response.id, error
            )
            raise
        await repository.responses.purge(response.id)  # refused or failed: nothing is left behind
        await code_containers.unmake(repository.containers, launched.made)
        raise
    metrics.response_created(response.model, stream=prepared.request.stream, background=prepared.request.background)
    return started


async def kept_and_launched(request: HTTPConnection, prepared: PreparedResponse, acting: Principal) -> Launched:
    """The response kept in the store and its workflow starting (`settled` has the start)."""
    repository, runner = _repository(request), _runner(request)
    response = prepared.response
    emit_events = prepared.request.stream or prepared.request.background
    # A background response sends its events to the endpoints its project has now, too.
    subscriptions = await repository.webhook_endpoints.subscriptions(acting.project) if response.background else []
    made = [auto.container_id for auto in prepared.containers]
    opening = opening_events(response) if emit_events else []
    await code_containers.make(request, response.id, prepared.containers)
    try:
        await repository.responses.create(
            response,
            prepared.items,
            opening or None,
            secrets=prepared.secrets,
            decisions=prepared.answers,
            parked=prepared.parked,
            project=acting.project,
            decided_by=acting.key_id,
            closes=prepared.closes,
            applies=sorted(prepared.applied),
            commits=prepared.commits,
        )
    except BaseException:
        await code_containers.unmake(repository.containers, made)
        raise
    launch = runner.launch(
        response,
        emit_events=emit_events,
        listings=prepared.listings,
        approvals=prepared.approvals,
        parked=list(prepared.parked),
        first_words=_first_words(prepared.request.input),
        webhooks=subscriptions,
        project=acting.project,
        streamed=prepared.request.stream,
    )
    return Launched(response.id, launch, made, opened_through=len(opening) - 1)


def _first_words(given: object, characters: int = 200) -> str:
    """The start of a request's input, for the workflow's summary in the Temporal UI."""
    if isinstance(given, str):
        return given[:characters]
    for item in given if isinstance(given, list) else []:
        content = getattr(item, "content", None)
        if isinstance(content, str):
            return content[:characters]
        for part in content if isinstance(content, list) else []:
            text = getattr(part, "text", None)
            if isinstance(text, str):
                return text[:characters]
    return ""
