"""`store/approvals.py`'s queries against SQLite, in seconds: a decision is kept once and ends
the wait; a stored response's end leaves its unanswered requests open, a person's decision
on one is kept for the follow-up that applies it (once), and removing that follow-up opens
it again; the pending list is the project's, oldest first. (Both stores, through the whole
stack: `tests/stack/test_mcp_approvals.py`, `tests/stack/test_open_approvals.py`.)"""

from __future__ import annotations

import pytest

from models.errors import ApprovalAlreadyAnsweredError
from models.ids import new_id
from models.items import McpApprovalRequestItem
from models.requests import CreateResponseRequest
from models.responses import Response
from store.approvals import Approvals
from store.database import Database
from store.repository import ResponseRepository


def _asking(request_id: str) -> Response:
    """A response that ended asking for one approval (as a non-background one does)."""
    response = Response.from_request(
        new_id("resp"), 1, CreateResponseRequest.model_validate({"model": "m", "input": "delete it"})
    )
    request = McpApprovalRequestItem(id=request_id, server_label="files", name="delete", arguments="{}")
    return response.model_copy(update={"status": "completed", "output": [request]})


async def _stored(repository: ResponseRepository, response: Response, project: str = "alpha") -> None:
    await repository.responses.create(response.model_copy(update={"status": "in_progress"}), [], project=project)
    await repository.responses.finish(response, with_event=False)


async def test_a_decision_is_kept_once_and_ends_the_wait(database: Database) -> None:
    approvals = Approvals(database)
    assert await approvals.record_waits("resp_a", ["mcpr_1", "mcpr_2"]) == 2
    assert await approvals.record_waits("resp_a", ["mcpr_1"]) == 0  # recorded already: as it was
    assert (await approvals.waiting())[0] == 2
    waited = await approvals.decide("mcpr_1", "resp_a", True, decided_by="key_1")
    assert waited is not None and waited >= 0
    with pytest.raises(ApprovalAlreadyAnsweredError):
        await approvals.decide("mcpr_1", "resp_a", False)
    assert await approvals.answered(["mcpr_1", "mcpr_2"]) == {"mcpr_1": "resp_a"}
    assert (await approvals.waiting())[0] == 1


async def test_an_open_request_is_decided_for_its_follow_up_which_applies_it_once(database: Database) -> None:
    repository = ResponseRepository(database)
    asking = _asking("mcpr_open")
    await _stored(repository, asking)
    assert await repository.approvals.undecided(asking.id)
    [pending] = await repository.approvals.page("alpha", after=None, limit=10)
    assert (pending.request_id, pending.applies) == ("mcpr_open", "on_follow_up")
    assert await repository.approvals.page("beta", after=None, limit=10) == []  # another project's: none

    assert await repository.approvals.keep(asking.id, "mcpr_open", approve=True, reason="ok", decided_by="k") >= 0
    with pytest.raises(ApprovalAlreadyAnsweredError):
        await repository.approvals.keep(asking.id, "mcpr_open", approve=False, reason=None, decided_by="k")
    assert not await repository.approvals.undecided(asking.id)
    assert (await repository.approvals.kept(["mcpr_open"]))["mcpr_open"].reason == "ok"

    follow_up, second = (
        Response.from_request(new_id("resp"), 2, CreateResponseRequest.model_validate({"model": "m", "input": "go"}))
        for _ in range(2)
    )
    await repository.responses.create(follow_up, [], project="alpha", closes=["mcpr_open"], applies=["mcpr_open"])
    assert await repository.approvals.kept(["mcpr_open"]) == {}  # closed: applied by the follow-up
    with pytest.raises(ApprovalAlreadyAnsweredError):  # no second follow-up runs the approved call
        await repository.responses.create(second, [], project="alpha", closes=["mcpr_open"], applies=["mcpr_open"])

    await repository.responses.purge(follow_up.id)  # the follow-up is gone: the request is open again, still decided
    assert (await repository.approvals.kept(["mcpr_open"]))["mcpr_open"].approve is True


async def test_the_pending_list_is_oldest_first_and_pages_by_cursor(database: Database) -> None:
    repository = ResponseRepository(database)
    for request_id in ("mcpr_a", "mcpr_b", "mcpr_c"):
        await _stored(repository, _asking(request_id))
    page = await repository.approvals.page("alpha", after=None, limit=2)
    assert [pending.request_id for pending in page] == ["mcpr_a", "mcpr_b"]
    cursor = await repository.approvals.cursor("alpha", "mcpr_b")
    assert cursor is not None
    assert [pending.request_id for pending in await repository.approvals.page("alpha", after=cursor, limit=2)] == [
        "mcpr_c"
    ]
    assert await repository.approvals.cursor("beta", "mcpr_b") is None
