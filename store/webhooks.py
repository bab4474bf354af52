"""Webhooks in the store: a project's endpoints, and the outbox.

**Endpoints** (`/v1/webhook_endpoints`, `api/webhooks.py`). The URL (which can hold a token)
and the signing secret are kept sealed with SECRETS_KEY (`sealing/secret_box.py`), never in
clear; the secret is shown once, when it is made. The API server reads a project's endpoints
when a background response is created (they are fixed for its life, `models/webhooks.py`);
the worker that delivers an event opens the endpoint's URL and keys by id.

**The outbox**: events waiting for their endpoints, a row an event and endpoint, and a queue
an endpoint with events waiting (when it is tried next, its failures in a row, its circuit),
for the dispatcher (`worker/webhooks.py`). A receiver that is down for a day leaves its
backlog here, in one place, instead of in millions of open workflows; a round of the
dispatcher reads the small queue table and the head of each due queue, never the whole
backlog. Putting an event is idempotent (a workflow task that runs again puts the same rows),
and wakes the dispatcher at once, in this process and, by the store's wake-ups, in the others.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from typing import Any

from models.errors import InvalidRequestError, SealedElsewhereError
from models.ids import new_id
from models.quotas import ProjectQuota, ProjectQuotas
from models.webhooks import WebhookEvent, WebhookPolicy, WebhookSubscription
from sealing.secret_box import SecretBox, is_current
from sealing.webhooks import new_secret, secret_bytes
from store import quota
from store.codec import dumps, loads
from store.database import Database, Row

SEALED_COLUMNS = ("url_sealed", "secret_sealed", "previous_secret_sealed")
LAST_SORT_KEY = 2**62
"""After every sort key (microseconds since the epoch): where a first page starts."""
PREVIOUS_SECRET_SECONDS = 24 * 3600
"""How long a rotated-out secret still signs, when the rotation keeps it."""


@dataclass(frozen=True)
class WebhookEndpointRow:
    id: str
    name: str
    url: str
    event_types: list[str]
    secret_hint: str
    created_at: int
    updated_at: int

    def to_wire(self, signing_secret: str | None = None) -> dict[str, Any]:
        wire = {
            "id": self.id,
            "object": "webhook_endpoint",
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "name": self.name,
            "url": self.url,
            "event_types": self.event_types,
            "signing_secret_hint": self.secret_hint,
        }
        return wire if signing_secret is None else wire | {"signing_secret": signing_secret}


@dataclass(frozen=True)
class SigningEndpoint:
    """What a delivery needs: where, and the keys to sign with (the current one first)."""

    url: str
    keys: list[bytes]


def unsealable() -> InvalidRequestError:
    return InvalidRequestError(
        "This server cannot keep webhook URLs and signing secrets sealed: its operator has not set SECRETS_KEY. "
        "Ask for SECRETS_KEY to be set, or for the operator's endpoints (WEBHOOK_URLS).",
        code="unsupported_parameter",
    )


def _event_types(stored: str | list[str]) -> list[str]:
    """A JSON column reads as text from one driver and as a list from another."""
    return list(loads(stored) if isinstance(stored, str) else stored)


def _hint(secret: str) -> str:
    return f"whsec_...{secret[-4:]}"


class WebhookEndpoints:
    def __init__(self, db: Database, secret_box: SecretBox | None) -> None:
        self.db = db
        self.secret_box = secret_box

    def _box(self) -> SecretBox:
        if self.secret_box is None:
            raise unsealable()
        return self.secret_box

    def _row(self, row: Row) -> WebhookEndpointRow:
        url = self._box().open_webhook_text(row["url_sealed"], project=row["project"])
        return WebhookEndpointRow(
            id=row["id"],
            name=row["name"],
            url=url if url is not None else "",
            event_types=_event_types(row["event_types"]),
            secret_hint=row["secret_hint"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )

    async def create(
        self, project: str, *, name: str, url: str, event_types: list[str], quotas: ProjectQuotas
    ) -> tuple[WebhookEndpointRow, str]:
        """The new endpoint, and its signing secret (shown this once)."""
        box = self._box()
        secret = new_secret()
        now = int(time.time())
        endpoint_id = new_id("we")
        async with self.db.write() as transaction:
            await quota.hold(transaction, self.db.dialect, ProjectQuota.WEBHOOK_ENDPOINTS, project)
            count = await transaction.value(
                "SELECT COUNT(*) FROM webhook_endpoints WHERE project = :project", project=project
            )
            quota.check(quotas, ProjectQuota.WEBHOOK_ENDPOINTS, int(count), 1)
            await transaction.run(
                "INSERT INTO webhook_endpoints (id, project, name, url_sealed, event_types, secret_sealed, "
                "secret_hint, created_at, updated_at, sort_key) VALUES (:id, :project, :name, :url, :event_types, "
                ":secret, :hint, :now, :now, :sort_key)",
                id=endpoint_id,
                project=project,
                name=name,
                url=box.seal_webhook_text(url, project=project),
                event_types=dumps(event_types),
                secret=box.seal_webhook_text(secret, project=project),
                hint=_hint(secret),
                now=now,
                sort_key=time.time_ns() // 1000,
            )
        return WebhookEndpointRow(endpoint_id, name, url, event_types, _hint(secret), now, now), secret

    async def get(self, project: str, endpoint_id: str) -> WebhookEndpointRow | None:
        async with self.db.read() as transaction:
            row = await transaction.one(
                "SELECT * FROM webhook_endpoints WHERE id = :id AND project = :project", id=endpoint_id, project=project
            )
        if row is None:
            return None
        await self._reseal_old(row, endpoint_id)
        return self._row(row)

    async def _reseal_old(self, row: Row, endpoint_id: str) -> None:
        """A row sealed by a version before purpose keys keeps its blobs in today's format from
        its first use on (those that open for its project: `sealing/sealer.py`)."""
        columns = [column for column in SEALED_COLUMNS if row[column] is not None and not is_current(row[column])]
        if not columns or self.secret_box is None:
            return
        for column in columns:
            try:
                _, resealed = self.secret_box.webhooks.open_for_use(row[column], project=row["project"])
            except SealedElsewhereError:
                continue
            async with self.db.write() as transaction:
                await transaction.run(
                    f"UPDATE webhook_endpoints SET {column} = :new WHERE id = :id AND {column} = :old",
                    new=resealed,
                    id=endpoint_id,
                    old=row[column],
                )

    async def page(
        self, project: str, *, after: str | None, limit: int
    ) -> tuple[list[WebhookEndpointRow], bool] | None:
        """The project's endpoints, newest first, from after the endpoint `after` (None when
        that is not one of the project's), and whether there are more."""
        async with self.db.read() as transaction:
            cursor = (LAST_SORT_KEY, "")
            if after is not None:
                row = await transaction.one(
                    "SELECT sort_key FROM webhook_endpoints WHERE id = :id AND project = :project",
                    id=after,
                    project=project,
                )
                if row is None:
                    return None
                cursor = (row["sort_key"], after)
            rows = await transaction.all(
                "SELECT * FROM webhook_endpoints WHERE project = :project AND (sort_key < :sort_key "
                "OR (sort_key = :sort_key AND id < :id)) ORDER BY sort_key DESC, id DESC LIMIT :limit",
                project=project,
                sort_key=cursor[0],
                id=cursor[1],
                limit=limit + 1,
            )
        return [self._row(row) for row in rows[:limit]], len(rows) > limit

    async def update(self, project: str, endpoint_id: str, changes: dict[str, Any]) -> WebhookEndpointRow | None:
        """Change what `changes` names (name, url, event_types); an update that changes nothing
        leaves `updated_at` as it was."""
        current = await self.get(project, endpoint_id)
        if current is None:
            return None
        changed = {name: value for name, value in changes.items() if getattr(current, name) != value}
        if not changed:
            return current
        updated = replace(current, **changed, updated_at=int(time.time()))
        async with self.db.write() as transaction:
            await transaction.run(
                "UPDATE webhook_endpoints SET name = :name, url_sealed = :url, event_types = :event_types, "
                "updated_at = :now WHERE id = :id AND project = :project",
                name=updated.name,
                url=self._box().seal_webhook_text(updated.url, project=project),
                event_types=dumps(updated.event_types),
                now=updated.updated_at,
                id=endpoint_id,
                project=project,
            )
        return updated

    async def delete(self, project: str, endpoint_id: str) -> bool:
        async with self.db.write() as transaction:
            removed = await transaction.run(
                "DELETE FROM webhook_endpoints WHERE id = :id AND project = :project", id=endpoint_id, project=project
            )
        if removed:
            self.db.erase_deleted_soon()
        return removed > 0

    async def rotate_secret(
        self, project: str, endpoint_id: str, *, keep_old: bool
    ) -> tuple[WebhookEndpointRow, str] | None:
        """A new signing secret (shown this once); `keep_old`: the old one still signs, beside
        it, for 24 hours."""
        box = self._box()
        secret = new_secret()
        now = int(time.time())
        async with self.db.write() as transaction:
            row = await transaction.one(
                "SELECT * FROM webhook_endpoints WHERE id = :id AND project = :project", id=endpoint_id, project=project
            )
            if row is None:
                return None
            await transaction.run(
                "UPDATE webhook_endpoints SET secret_sealed = :secret, secret_hint = :hint, updated_at = :now, "
                "previous_secret_sealed = :previous, previous_secret_until = :until WHERE id = :id",
                secret=box.seal_webhook_text(secret, project=project),
                hint=_hint(secret),
                now=now,
                id=endpoint_id,
                previous=row["secret_sealed"] if keep_old else None,
                until=now + PREVIOUS_SECRET_SECONDS if keep_old else None,
            )
        if not keep_old:
            self.db.erase_deleted_soon()
        return replace(self._row(row), secret_hint=_hint(secret), updated_at=now), secret

    async def subscriptions(self, project: str) -> list[WebhookSubscription]:
        """The project's endpoints and the events each takes, for a response being created."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT id, event_types FROM webhook_endpoints WHERE project = :project", project=project
            )
        return [WebhookSubscription(endpoint=row["id"], event_types=_event_types(row["event_types"])) for row in rows]

    async def signing(self, endpoint_id: str) -> SigningEndpoint | None:
        """Where an event to this endpoint goes and the keys that sign it; None when it is gone
        (or sealed with another SECRETS_KEY)."""
        if self.secret_box is None:
            return None
        async with self.db.read() as transaction:
            row = await transaction.one(
                "SELECT project, url_sealed, secret_sealed, previous_secret_sealed, previous_secret_until "
                "FROM webhook_endpoints WHERE id = :id",
                id=endpoint_id,
            )
        if row is None:
            return None
        await self._reseal_old(row, endpoint_id)
        project = row["project"]
        url = self.secret_box.open_webhook_text(row["url_sealed"], project=project)
        secret = self.secret_box.open_webhook_text(row["secret_sealed"], project=project)
        if url is None or secret is None:
            return None
        keys = [secret_bytes(secret)]
        previous = row["previous_secret_sealed"]
        if previous is not None and (row["previous_secret_until"] or 0) > time.time():
            opened = self.secret_box.open_webhook_text(previous, project=project)
            keys += [secret_bytes(opened)] if opened is not None else []
        return SigningEndpoint(url=url, keys=keys)


WAKE_TOPIC = "webhooks"


@dataclass(frozen=True)
class OutboxEntry:
    endpoint: str
    event: WebhookEvent
    policy: WebhookPolicy
    attempts: int
    give_up_at: int
    """ms since the epoch."""


@dataclass(frozen=True)
class DueQueue:
    endpoint: str
    failures: int


class WebhookOutbox:
    def __init__(self, db: Database) -> None:
        self.db = db
        self.nudged = asyncio.Event()
        """Set when an event was put (here or, heard, in another process)."""
        db.wakeups.listen(WAKE_TOPIC, lambda _key: self.nudged.set())

    async def put(self, endpoints: list[str], event: WebhookEvent, policy: WebhookPolicy, now_ms: int) -> None:
        if not endpoints:
            return
        async with self.db.write() as transaction:
            await transaction.run_many(
                "INSERT INTO webhook_outbox (endpoint, event_id, event, policy, created_at, give_up_at, attempts) "
                "VALUES (:endpoint, :event_id, :event, :policy, :now, :give_up_at, 0) "
                "ON CONFLICT (endpoint, event_id) DO NOTHING",
                [
                    {
                        "endpoint": endpoint,
                        "event_id": event.id,
                        "event": event.model_dump_json(),
                        "policy": policy.model_dump_json(),
                        "now": now_ms,
                        "give_up_at": now_ms + int(policy.give_up_after_seconds * 1000),
                    }
                    for endpoint in endpoints
                ],
            )
            await transaction.run_many(
                "INSERT INTO webhook_queues (endpoint, failures, next_attempt_at, open_until) "
                "VALUES (:endpoint, 0, :now, 0) ON CONFLICT (endpoint) DO NOTHING",
                [{"endpoint": endpoint, "now": now_ms} for endpoint in endpoints],
            )
        self.nudged.set()
        self.db.wakeups.publish(WAKE_TOPIC, "outbox")

    async def due_queues(self, now_ms: int) -> list[DueQueue]:
        """Endpoints with events waiting whose next attempt is due and whose circuit is closed
        (or half open: its cooldown is over). A queue stays when it empties (a row an
        endpoint): nothing is deleted that a concurrent put could need."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT q.endpoint, q.failures FROM webhook_queues q "
                "WHERE q.next_attempt_at <= :now AND q.open_until <= :now "
                "AND EXISTS (SELECT 1 FROM webhook_outbox o WHERE o.endpoint = q.endpoint)",
                now=now_ms,
            )
        return [DueQueue(row["endpoint"], row["failures"]) for row in rows]

    async def head(self, endpoint: str, limit: int) -> list[OutboxEntry]:
        """The endpoint's oldest events, in the order they were put."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT event, policy, attempts, give_up_at FROM webhook_outbox WHERE endpoint = :endpoint "
                "ORDER BY created_at, event_id LIMIT :limit",
                endpoint=endpoint,
                limit=limit,
            )
        return [
            OutboxEntry(
                endpoint,
                WebhookEvent.model_validate_json(row["event"]),
                WebhookPolicy.model_validate_json(row["policy"]),
                row["attempts"],
                row["give_up_at"],
            )
            for row in rows
        ]

    async def remove(self, entry: OutboxEntry, *, delivered: bool) -> None:
        """Delivered (the endpoint's failures and circuit start again), or never to be."""
        async with self.db.write() as transaction:
            await transaction.run(
                "DELETE FROM webhook_outbox WHERE endpoint = :endpoint AND event_id = :event_id",
                endpoint=entry.endpoint,
                event_id=entry.event.id,
            )
            if delivered:
                await transaction.run(
                    "UPDATE webhook_queues SET failures = 0, open_until = 0 WHERE endpoint = :endpoint",
                    endpoint=entry.endpoint,
                )

    async def retry_later(self, entry: OutboxEntry, next_attempt_at: int, open_until: int) -> None:
        """The attempt failed: the endpoint is tried again at `next_attempt_at`, its circuit
        open until `open_until` (0: closed)."""
        async with self.db.write() as transaction:
            await transaction.run(
                "UPDATE webhook_outbox SET attempts = attempts + 1 WHERE endpoint = :endpoint AND event_id = :event_id",
                endpoint=entry.endpoint,
                event_id=entry.event.id,
            )
            await transaction.run(
                "UPDATE webhook_queues SET failures = failures + 1, next_attempt_at = :at, open_until = :open_until "
                "WHERE endpoint = :endpoint",
                at=next_attempt_at,
                open_until=open_until,
                endpoint=entry.endpoint,
            )

    async def backlog(self) -> dict[str, int]:
        """Events waiting, by endpoint (a count over the backlog: read now and then)."""
        async with self.db.read() as transaction:
            rows = await transaction.all("SELECT endpoint, COUNT(*) AS waiting FROM webhook_outbox GROUP BY endpoint")
        return {row["endpoint"]: row["waiting"] for row in rows}

    async def open_circuits(self, now_ms: int) -> set[str]:
        async with self.db.read() as transaction:
            rows = await transaction.all("SELECT endpoint FROM webhook_queues WHERE open_until > :now", now=now_ms)
        return {row["endpoint"] for row in rows}
