"""Stored responses as a request sees them: only its project's (an approver key's, only those
that wait for a decision; anything else is not found, exactly as an unknown id), and a
running one with the output streamed so far."""

from __future__ import annotations

from starlette.requests import Request

from http_plumbing.params import plausible_id, principal
from http_plumbing.params import repository as repository_of
from models.errors import NotFoundError
from models.responses import Response
from response_service.progress import OutputFolds
from store.approvals import Approvals
from store.event_log import EventLog

OUTPUT_FOLDS = OutputFolds()
"""Running responses' outputs so far, kept between polls (`response_service/progress.py`)."""


async def with_progress(events: EventLog, response: Response) -> Response:
    """A running response shows the output streamed so far (its log, when it keeps one)."""
    if response.is_terminal:
        OUTPUT_FOLDS.forget(response.id)
        return response
    fold = OUTPUT_FOLDS.of(response.id, len(response.output))
    fold.apply(await events.item_events(response.id, from_output_index=len(response.output), after=fold.last_sequence))
    if not fold.items:
        return response
    output = [item.model_dump(mode="json", by_alias=True) for item in response.output]
    return Response.model_validate(response.model_dump(mode="json", by_alias=True) | {"output": output + fold.output()})


async def stored_response(request: Request, response_id: str) -> Response:
    """A stored response of the request's project; an approver key sees only those that wait
    for a decision. Anything else is not found, exactly as an unknown id."""
    acting, stores = principal(request), repository_of(request)
    response = await stores.responses.get(response_id, project=acting.project) if plausible_id(response_id) else None
    if response is None or (
        acting.approver and not await waits_for_approval(stores.approvals, stores.events, response)
    ):
        raise NotFoundError(f"Response with id '{response_id}' not found.", param="response_id")
    return response


async def waits_for_approval(approvals: Approvals, events: EventLog, response: Response) -> bool:
    """It waits for a decision now, or it ended leaving a request open that nobody has decided."""
    if response.is_terminal:
        return await approvals.undecided(response.id)
    if response.status != "in_progress":
        return False
    output = (await with_progress(events, response)).output
    return bool(output) and output[-1].type == "mcp_approval_request"
