"""A response's own rows, and what its creation, end and removal change elsewhere, each in
one transaction. Each other concept keeps its rows in a module of its own
(`store/approvals.py`, `store/conversations.py`, `store/cancels.py`, ...) whose `..._in`
methods take part in those transactions: what a response's end means for approvals is
`Approvals.settle_in`'s to say, for its conversation `Conversations.append_turn`'s. Documents
are JSON text (`store/codec.py`); a response is written with pydantic's `model_dump_json` and
read with `model_validate_json`, never through a dict. In-process coordination is not here:
the handover of ends to waiting requests is `activities/handover.py`'s."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Unpack

from models.events import TERMINAL_TYPE_BY_STATUS, LifecycleEvent
from models.history_budget import restored
from models.mcp import McpListing
from models.responses import TERMINAL_STATUSES, Response, ResponseStatus
from models.tools import McpSecrets
from store.approvals import Approvals
from store.chat_contexts import context_in, extend_in, fold_into_followers
from store.codec import dumps, loads
from store.conversations import Conversations
from store.database import Database, Transaction
from store.event_log import EventLog
from store.history_deletions import HistoryDeletions
from store.mcp_secrets import McpSecretsStore
from store.paging import page_of_items
from store.parked import ParkedFields
from store.response_rows import CreationParts, insert_response
from store.schema import NO_PROJECT
from store.steers import SteerSettlement

Order = Literal["asc", "desc"]

TERMINAL = tuple(sorted(TERMINAL_STATUSES))

# Every table that keeps rows of a response, by its response id (besides `responses` itself and
# `approval_decisions`, which `purge` handles on its own).
RESPONSE_TABLES = (
    "input_items",
    "output_items",
    "chat_contexts",
    "inference_results",
    "inference_claims",
    "cancel_requests",
    "mcp_secrets",
    "mcp_listings",
    "parked_fields",
    "events",
    "approval_waits",
    "open_approvals",
    "tool_dispatches",
    "steers",
)


@dataclass(frozen=True)
class Page:
    data: list[dict[str, Any]]
    has_more: bool


class Responses:
    def __init__(self, db: Database, events: EventLog, mcp_secrets: McpSecretsStore) -> None:
        self.db = db
        self.events = events
        self.mcp_secrets = mcp_secrets

    async def create(
        self,
        response: Response,
        items: list[tuple[str, dict[str, Any]]],
        first_events: list[dict[str, Any]] | None = None,
        *,
        secrets: dict[str, McpSecrets] | None = None,
        project: str = NO_PROJECT,
        **parts: Unpack[CreationParts],
    ) -> None:
        """The response as created, with its input items, first events and sealed MCP secrets
        (by server label), for `project`, in one transaction with the rest of what it brings
        (`parts`: `store/response_rows.py`)."""
        sealed = {label: self.mcp_secrets.seal(value, project) for label, value in (secrets or {}).items()}
        async with self.db.write() as transaction:
            await insert_response(transaction, self.events, response, items, first_events, sealed, project, **parts)

    async def _create_in(
        self,
        transaction: Transaction,
        response: Response,
        items: list[tuple[str, dict[str, Any]]],
        first_events: list[dict[str, Any]] | None,
        *,
        project: str = NO_PROJECT,
        **parts: Unpack[CreationParts],
    ) -> None:
        """`create_response` within a transaction (a steered response's successor, kept with its end)."""
        await insert_response(transaction, self.events, response, items, first_events, {}, project, **parts)

    async def get(
        self, response_id: str, *, include_unstored: bool = False, project: str | None = None
    ) -> Response | None:
        """A response by id; with `project`, only one of that project (else None, as for an
        unknown id)."""
        query, params = "SELECT data FROM responses WHERE id = :id", dict[str, Any](id=response_id)
        if not include_unstored:
            query, params = query + " AND stored = :stored", params | {"stored": True}
        if project is not None:
            query, params = query + " AND project = :project", params | {"project": project}
        async with self.db.read() as transaction:
            data = await transaction.value(query, **params)
        return None if data is None else Response.model_validate_json(data)

    async def advance_status(self, response_id: str, status: ResponseStatus, *, with_event: bool) -> bool:
        """Move a running response to `status`, with the event that announces it; False when
        it has that status already. A response that has ended keeps its end: a step that runs
        again never takes it back. Raises LookupError when the response is not in the store."""
        async with self.db.write() as transaction:
            current = await transaction.one("SELECT status, data FROM responses WHERE id = :id", id=response_id)
            if current is None:
                raise LookupError(response_id)
            if current["status"] == status or current["status"] in TERMINAL_STATUSES:
                return False
            updated = Response.model_validate_json(current["data"]).model_copy(update={"status": status})
            await transaction.run(
                "UPDATE responses SET status = :status, data = :data WHERE id = :id",
                id=response_id,
                status=status,
                data=updated.model_dump_json(),
            )
            if with_event:
                event = LifecycleEvent.model_validate({"type": f"response.{status}", "response": updated}).wire()
                await self.events.append_in(transaction, response_id, [event])
        if with_event:
            self.events.notifier.notify(response_id)
        return True

    async def finish(
        self,
        response: Response,
        *,
        with_event: bool,
        parked: dict[str, str] | None = None,
        tool_messages: list[dict[str, Any]] | None = None,
        listings: list[McpListing] | None = None,
        steering: SteerSettlement | None = None,
    ) -> Response | None:
        """Write a response's end in one transaction: the final response, its output items
        whole again (`parked`: those that travelled as stubs -> the item their fields are parked
        under) and, `with_event`,
        its terminal event; for a stored response also what its chain needs (results of tools
        run after its last inference call join its chat context; its MCP listings), and its
        MCP secrets go. An unstored response keeps only its row and its event log, until the
        request or stream that waits for it has it (`purge`) or `sweep_unstored` runs; one a
        WebSocket connection holds keeps its chain too, until the connection lets it go.

        The steers the response holds are settled in the same transaction (`steering`: its
        `made` says which successor they made, `store/steers.py`), so whoever sees the end
        finds them settled. The first end written stays: a finalize that runs again (its
        workflow task was retried after the first one wrote) changes nothing and gets the
        response as it was written. Returns the response as it ends, or None when it is gone."""
        response_id = response.id
        async with self.db.write() as transaction:
            if parked:
                response = await self._restored(transaction, response, parked)
            changed = await transaction.run(
                "UPDATE responses SET status = :status, data = :data WHERE id = :id AND status NOT IN (:terminal)",
                id=response_id,
                status=response.status,
                data=response.model_dump_json(),
                terminal=TERMINAL,
            )
            if changed == 0:
                data = await transaction.value("SELECT data FROM responses WHERE id = :id", id=response_id)
                if steering is not None:
                    await steering.made_before(transaction)
                return None if data is None else Response.model_validate_json(data)
            if steering is not None:  # before its MCP secrets go: a successor takes them
                await steering.settle_in(transaction, response, self._create_in)
            if response.conversation is not None:
                await Conversations.append_turn(
                    transaction, response.conversation.id, response_id, await self._turn_items(transaction, response)
                )
            had_secrets = await transaction.run("DELETE FROM mcp_secrets WHERE response_id = :id", id=response_id)
            await Approvals.settle_in(transaction, response)
            if not (response.store or response.held_by_connection):
                for table in RESPONSE_TABLES:
                    if table != "events":
                        await transaction.run(f"DELETE FROM {table} WHERE response_id = :id", id=response_id)
            else:
                await transaction.run_many(
                    "INSERT INTO output_items (response_id, position, item_id, data) "
                    "VALUES (:response_id, :position, :item_id, :data)",
                    [
                        {
                            "response_id": response_id,
                            "position": position,
                            "item_id": item.id,
                            "data": item.model_dump_json(exclude_none=True),
                        }
                        for position, item in enumerate(response.output)
                    ],
                )
                if tool_messages:
                    await extend_in(transaction, response_id, tool_messages)
                if listings:
                    listings = await self._whole_listings(transaction, response_id, listings, parked or {})
                    await transaction.run(
                        "INSERT INTO mcp_listings (response_id, listings) VALUES (:id, :listings) "
                        "ON CONFLICT (response_id) DO UPDATE SET listings = excluded.listings",
                        id=response_id,
                        listings=dumps([listing.model_dump(mode="json") for listing in listings]),
                    )
                for table in ("parked_fields", "inference_claims"):
                    await transaction.run(f"DELETE FROM {table} WHERE response_id = :id", id=response_id)
            if with_event:
                event = LifecycleEvent.model_validate(
                    {"type": TERMINAL_TYPE_BY_STATUS[response.status], "response": response}
                ).wire()
                await self.events.append_in(transaction, response_id, [event])
        if with_event:
            self.events.notifier.notify(response_id)
        if had_secrets:
            self.db.erase_deleted_soon()
        return response

    @staticmethod
    async def _restored(transaction: Transaction, response: Response, parked: dict[str, str]) -> Response:
        fields = await ParkedFields.get_in(transaction, response.id, sorted(set(parked.values())))
        output = [
            restored(item, fields.get(parked[item.id], {})) if item.id in parked else item for item in response.output
        ]
        return response.model_copy(update={"output": output})

    @staticmethod
    async def _whole_listings(
        transaction: Transaction, response_id: str, listings: list[McpListing], parked: dict[str, str]
    ) -> list[McpListing]:
        """Listings that travelled as stubs, whole again: the chain reuses them."""
        fields = await ParkedFields.get_in(
            transaction, response_id, [listing.item.id for listing in listings if listing.item.id in parked]
        )
        return [
            listing.model_copy(update={"item": restored(listing.item, fields[listing.item.id])})
            if listing.item.id in fields
            else listing
            for listing in listings
        ]

    @staticmethod
    async def _turn_items(transaction: Transaction, response: Response) -> list[tuple[str, dict[str, Any]]]:
        """What a response adds to its conversation: its input and its output, if it ended well."""
        if response.status not in ("completed", "incomplete"):
            return []
        rows = await transaction.all(
            "SELECT item_id, data FROM input_items WHERE response_id = :id ORDER BY position", id=response.id
        )
        return [(row["item_id"], loads(row["data"])) for row in rows] + [
            (item.id, item.model_dump(mode="json", exclude_none=True)) for item in response.output
        ]

    async def find_item(self, item_id: str, project: str) -> dict[str, Any] | None:
        """An item of any stored response (input or output) or conversation of `project`, by its id."""
        async with self.db.read() as transaction:
            for query in (
                "SELECT i.data FROM output_items i JOIN responses r ON r.id = i.response_id "
                "WHERE i.item_id = :id AND r.project = :project LIMIT 1",
                "SELECT i.data FROM input_items i JOIN responses r ON r.id = i.response_id "
                "WHERE i.item_id = :id AND r.project = :project AND r.stored = :stored LIMIT 1",
                "SELECT i.data FROM conversation_items i JOIN conversations c ON c.id = i.conversation_id "
                "WHERE i.item_id = :id AND c.project = :project LIMIT 1",
            ):
                data = await transaction.value(
                    query, id=item_id, project=project, **({"stored": True} if "stored" in query else {})
                )
                if data is not None:
                    found: dict[str, Any] = loads(data)
                    return found
        return None

    async def stored_output_items(self, item_ids: list[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """Those of these ids that are output items of a stored response (of any project):
        id -> (the response's project, the item)."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT i.item_id, i.data, r.project FROM output_items i JOIN responses r ON r.id = i.response_id "
                "WHERE i.item_id IN (:ids)",
                ids=item_ids,
            )
        return {row["item_id"]: (row["project"], loads(row["data"])) for row in rows}

    async def purge(self, response_id: str, *, with_decisions: bool = True) -> bool:
        """Remove every row of a response; `with_decisions`: also the approval decisions it
        made and those made on its requests (an unstored response's stay: they keep a request
        it answered from being answered, and run, again). True when the response existed."""
        async with self.db.write() as transaction:
            removed, had_secrets = await self._delete_rows(transaction, response_id, with_decisions=with_decisions)
        if had_secrets:
            self.db.erase_deleted_soon()
        return removed

    @staticmethod
    async def _delete_rows(transaction: Transaction, response_id: str, *, with_decisions: bool) -> tuple[bool, bool]:
        """Whether the response was there, and whether it still held sealed secrets."""
        if with_decisions:
            await Approvals.forget_in(transaction, response_id)
        await fold_into_followers(transaction, response_id)  # those that follow it keep their context
        removed = await transaction.run("DELETE FROM responses WHERE id = :id", id=response_id)
        if removed:
            await HistoryDeletions.request_in(transaction, [response_id])
        secrets = 0
        for table in RESPONSE_TABLES:
            deleted = await transaction.run(f"DELETE FROM {table} WHERE response_id = :id", id=response_id)
            secrets += deleted if table == "mcp_secrets" else 0
        return removed > 0, secrets > 0

    async def sweep_unstored(self, ended_before: float) -> int:
        """Remove what unstored responses created before `ended_before` (Unix seconds) left
        behind: those that ended but whose request or stream never took their end (its
        client went away). Returns how many (a partial index holds just the unstored ones)."""
        async with self.db.write() as transaction:
            rows = await transaction.all(
                "SELECT id FROM responses WHERE NOT stored AND status IN (:terminal) AND sort_key < :before LIMIT 500",
                terminal=TERMINAL,
                before=int(ended_before * 1_000_000),
            )
            for row in rows:
                await self._delete_rows(
                    transaction, row["id"], with_decisions=False
                )  # no secrets: they went at the end
        return len(rows)

    async def expired(self, created_before: float, limit: int = 100) -> list[str]:
        """Stored responses that ended and were created before `created_before` (Unix seconds)."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT id FROM responses WHERE stored = :stored AND status IN (:terminal) AND sort_key < :before "
                "ORDER BY sort_key LIMIT :limit",
                stored=True,
                terminal=TERMINAL,
                before=int(created_before * 1_000_000),
                limit=limit,
            )
        return [row["id"] for row in rows]

    async def project_of(self, response_id: str) -> str | None:
        async with self.db.read() as transaction:
            project: str | None = await transaction.value(
                "SELECT project FROM responses WHERE id = :id", id=response_id
            )
            return project

    async def page(
        self, *, project: str, after: str | None, limit: int, order: Order, previous_response_id: str | None = None
    ) -> Page:
        """Stored responses of `project` (those that follow `previous_response_id` only); an
        `after` of another project is unknown (LookupError)."""
        direction, beyond = ("ASC", ">") if order == "asc" else ("DESC", "<")
        async with self.db.read() as transaction:
            where, params = (
                "stored = :stored AND project = :project",
                {"stored": True, "project": project, "limit": limit + 1},
            )
            if previous_response_id is not None:
                where += " AND previous_response_id = :previous"
                params |= {"previous": previous_response_id}
            if after is not None:
                sort_key = await transaction.value(
                    "SELECT sort_key FROM responses WHERE id = :id AND project = :project AND stored = :stored",
                    id=after,
                    project=project,
                    stored=True,
                )
                if sort_key is None:
                    raise LookupError(after)
                where += f" AND (sort_key {beyond} :sort_key OR (sort_key = :sort_key AND id {beyond} :after))"
                params |= {"sort_key": sort_key, "after": after}
            rows = await transaction.all(
                f"SELECT data FROM responses WHERE {where} ORDER BY sort_key {direction}, id {direction} LIMIT :limit",
                **params,
            )
        return Page(data=[loads(row["data"]) for row in rows[:limit]], has_more=len(rows) > limit)

    # ---- input items -----------------------------------------------------------------

    async def input_items_page(
        self, response_id: str, *, after: str | None, before: str | None, limit: int, order: Order
    ) -> Page:
        async with self.db.read() as transaction:
            items, has_more = await page_of_items(
                transaction, "input_items", response_id, after=after, before=before, limit=limit, order=order
            )
        return Page(data=items, has_more=has_more)

    async def input_items_of(self, response_id: str) -> list[dict[str, Any]]:
        """A response's input items, as listed, in order."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT data FROM input_items WHERE response_id = :id ORDER BY position", id=response_id
            )
        return [loads(row["data"]) for row in rows]

    # ---- chat context ----------------------------------------------------------------

    async def chat_context(self, response_id: str) -> list[dict[str, Any]] | None:
        async with self.db.read() as transaction:
            return await context_in(transaction, response_id)

    # ---- MCP listings --------------------------------------------------------------

    async def listings(self, response_id: str) -> list[McpListing]:
        async with self.db.read() as transaction:
            saved = loads(
                await transaction.value("SELECT listings FROM mcp_listings WHERE response_id = :id", id=response_id)
            )
        return [McpListing.model_validate(listing) for listing in saved or []]
