"""Recovery of responses the API stored but never started.

The API writes a response, then starts its workflow. An API process that dies between the
two leaves a response that no workflow will ever end. Every worker sweeps for them: a
response still queued or in progress, created more than `grace_seconds` ago (a normal
start takes milliseconds) and within `window_seconds`, is started now. A workflow that
runs or has run under its id is left alone (Temporal rejects the duplicate), so a sweep
never runs a response twice, and several workers may sweep at once.

Each response is looked at until a sweep has found its workflow started (or started it),
then marked (`start_confirmed`, with an index of the unmarked running ones): responses that
wait for days cost a sweep nothing, only new ones do, once each.
"""

from __future__ import annotations

import logging
import time

from temporalio.exceptions import WorkflowAlreadyStartedError

from models.responses import Response
from models.webhooks import WebhookSubscription
from response_service.runner import ResponseRunner
from store.event_log import EventLog
from store.responses import Responses
from store.starts import Starts
from store.webhooks import WebhookEndpoints

log = logging.getLogger(__name__)


class OrphanSweeper:
    def __init__(
        self,
        runner: ResponseRunner,
        *,
        starts: Starts,
        events: EventLog,
        responses: Responses,
        webhook_endpoints: WebhookEndpoints,
        grace_seconds: float = 30.0,
        window_seconds: float = 24 * 3600.0,
    ) -> None:
        self.starts = starts
        """Which responses' starts are confirmed: an unconfirmed one past the grace is an orphan."""
        self.events = events
        self.responses = responses
        self.webhook_endpoints = webhook_endpoints
        self.runner = runner
        self.grace_seconds = grace_seconds
        self.window_seconds = window_seconds

    async def sweep(self) -> list[str]:
        """Start every orphan found now; returns their ids. A response that cannot be read or
        started is logged and skipped: it never stops the recovery of the others. A response
        whose workflow runs (or was just started here) is marked, and never looked at again."""
        now = time.time()
        started, confirmed = [], []
        candidates = await self.starts.unconfirmed_created_between(now - self.window_seconds, now - self.grace_seconds)
        for response in candidates:
            try:
                emit_events = await self.events.has_events(response.id)
                project = await self.responses.project_of(response.id) or ""
                await self.runner.start(
                    response,
                    emit_events=emit_events,
                    if_never_started=True,
                    webhooks=await self._subscriptions(response, project),
                    project=project,
                )
            except WorkflowAlreadyStartedError:
                confirmed.append(response.id)
                continue
            except Exception as error:  # noqa: BLE001 - one response's trouble is not the sweep's
                log.warning("could not start the workflow of orphaned response %s: %s", response.id, error)
                continue
            log.warning("started the workflow of response %s, which its API server never started", response.id)
            started.append(response.id)
            confirmed.append(response.id)
        await self.starts.confirm_started(confirmed)
        return started

    async def _subscriptions(self, response: Response, project: str) -> list[WebhookSubscription]:
        """A background response's project's webhook endpoints, as its API server would have
        read them."""
        if not response.background:
            return []
        return await self.webhook_endpoints.subscriptions(project)
