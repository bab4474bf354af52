"""API keys: made, listed and revoked in the store (`durable-responses keys`), recognised by
the API from a cache that follows the store within seconds.

A key is `sk-dr-` and 43 random URL-safe characters (256 bits); the store keeps its
SHA-256, its first characters (to tell keys apart) and its project. A fast hash is right for
random keys of that length: nobody can guess one, so nobody can invert its hash by guessing.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
import time
from dataclasses import dataclass

from access.principal import Principal
from models.errors import InvalidRequestError
from store.database import Database

KEY_PREFIX = "sk-dr-"
SHOWN_CHARACTERS = 12
REFRESH_SECONDS = 2.0
"""How often an API process reads the keys again: revoked keys are refused within this."""
RELOAD_ON_MISS_SECONDS = 0.25
"""An unknown key makes the keys be read again (a new key works at once), at most this often."""
PROJECT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class KeyRecord:
    id: str
    project: str
    prefix: str
    approver: bool
    created_at: int
    revoked_at: int | None

    def principal(self) -> Principal:
        return Principal(project=self.project, key_id=self.id, approver=self.approver)


class KeyStore:
    """The `api_keys` table."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, project: str, *, approver: bool) -> tuple[KeyRecord, str]:
        """A new key for `project`: its record and the key itself (shown once, never stored)."""
        if not PROJECT_NAME.match(project):
            raise InvalidRequestError(
                "A project name is 1 to 80 letters, digits, '_', '.' or '-', starting with a letter or digit.",
                param="project",
            )
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        record = KeyRecord(
            id="key_" + secrets.token_hex(12),
            project=project,
            prefix=key[:SHOWN_CHARACTERS],
            approver=approver,
            created_at=int(time.time()),
            revoked_at=None,
        )
        async with self.db.write() as transaction:
            await transaction.run(
                "INSERT INTO api_keys (id, project, key_hash, prefix, approver, created_at, revoked_at) "
                "VALUES (:id, :project, :key_hash, :prefix, :approver, :created_at, NULL)",
                id=record.id,
                project=project,
                key_hash=hash_key(key),
                prefix=record.prefix,
                approver=approver,
                created_at=record.created_at,
            )
        return record, key

    async def all(self) -> list[KeyRecord]:
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT id, project, prefix, approver, created_at, revoked_at FROM api_keys ORDER BY created_at, id"
            )
        return [
            KeyRecord(
                row["id"], row["project"], row["prefix"], bool(row["approver"]), row["created_at"], row["revoked_at"]
            )
            for row in rows
        ]

    async def project_births(self) -> dict[str, int]:
        """When each project came to be: its first key's time (revoked ones count)."""
        async with self.db.read() as transaction:
            rows = await transaction.all("SELECT project, min(created_at) AS born FROM api_keys GROUP BY project")
        return {row["project"]: int(row["born"]) for row in rows}

    async def revoke(self, key_id: str) -> bool:
        async with self.db.write() as transaction:
            changed = await transaction.run(
                "UPDATE api_keys SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL",
                id=key_id,
                now=int(time.time()),
            )
        return changed > 0

    async def active_by_hash(self) -> tuple[dict[str, KeyRecord], bool]:
        """The keys in use, by hash, and whether any key was ever made."""
        async with self.db.read() as transaction:
            rows = await transaction.all(
                "SELECT id, project, key_hash, prefix, approver, created_at, revoked_at FROM api_keys"
            )
        active = {
            row["key_hash"]: KeyRecord(
                row["id"], row["project"], row["prefix"], bool(row["approver"]), row["created_at"], row["revoked_at"]
            )
            for row in rows
            if row["revoked_at"] is None
        }
        return active, bool(rows)


class KeyRing:
    """What an API process knows of the keys, read again from the store every few seconds.

    The server is open (every request acts for `OPEN`) until the first key is made; from then
    on every request needs a key, also after every key is revoked, so revoking the last key
    never opens the server again."""

    def __init__(self, keys: KeyStore, *, refresh_seconds: float = REFRESH_SECONDS) -> None:
        self.keys = keys
        self.refresh_seconds = refresh_seconds
        self._active: dict[str, KeyRecord] = {}
        self._active_ids: frozenset[str] = frozenset()
        self._closed = False
        self._loaded_at = float("-inf")
        self._loading = asyncio.Lock()

    async def closed(self) -> bool:
        """Whether requests need a key."""
        await self._fresh()
        return self._closed

    async def find(self, key: str) -> KeyRecord | None:
        """The active key that `key` is, or None (unknown, or revoked). A key not known yet
        may be new: the keys are read again, at most every `RELOAD_ON_MISS_SECONDS`."""
        await self._fresh()
        # A lookup by hash: timing can tell at most whether a hash is known, never the key.
        digest = hash_key(key)
        found = self._active.get(digest)
        if found is None and time.monotonic() - self._loaded_at >= RELOAD_ON_MISS_SECONDS:
            await self._reload()
            found = self._active.get(digest)
        return found

    async def revoked(self, principal: Principal) -> bool:
        """Whether `principal` may no longer act: its key was revoked (or, acting while the
        server ran open, a key has been made since). What open connections ask before each
        message, from the keys read at most `refresh_seconds` ago."""
        await self._fresh()
        if principal.key_id is None:
            return self._closed
        return principal.key_id not in self._active_ids

    async def _fresh(self) -> None:
        if time.monotonic() - self._loaded_at >= self.refresh_seconds:
            await self._reload()

    async def _reload(self) -> None:
        loaded_at = self._loaded_at
        async with self._loading:
            if self._loaded_at != loaded_at:
                return  # another request read them meanwhile
            self._active, self._closed = await self.keys.active_by_hash()
            self._active_ids = frozenset(record.id for record in self._active.values())
            self._loaded_at = time.monotonic()
