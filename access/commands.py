"""`durable-responses keys create|list|revoke`: API keys, managed in the store that the API
servers read them from (running servers see a change within seconds)."""

from __future__ import annotations

import sys
import time

from access.keys import KeyRecord, KeyStore
from models.errors import InvalidRequestError, SchemaTooNewError, StartupError
from store.opening import open_database


async def run_keys_command(
    action: str, database_url: str, *, project: str | None = None, approver: bool = False, key_id: str | None = None
) -> int:
    try:
        db = open_database(database_url)
    except (ValueError, OSError) as error:
        raise StartupError(f"cannot open the database: {error}") from error
    try:
        try:
            await db.migrate()
        except SchemaTooNewError as error:
            raise StartupError(str(error)) from None
        keys = KeyStore(db)
        match action:
            case "create":
                assert project is not None
                try:
                    record, key = await keys.create(project, approver=approver)
                except InvalidRequestError as error:
                    raise StartupError(error.message) from None
                kind = "an approver key" if approver else "a key"
                print(
                    f"made {kind} for project {record.project!r}: {record.id} (shown once; keep it now)",
                    file=sys.stderr,
                )
                print(key, flush=True)
                return 0
            case "list":
                for record in await keys.all():
                    print(_line(record))
                return 0
            case _:
                assert key_id is not None
                if await keys.revoke(key_id):
                    print(f"revoked {key_id}; running servers refuse it within seconds")
                    return 0
                print(f"no active key {key_id!r}", file=sys.stderr)
                return 1
    finally:
        await db.close()


def _line(record: KeyRecord) -> str:
    made = time.strftime("%Y-%m-%d %H:%M", time.gmtime(record.created_at))
    state = (
        "revoked " + time.strftime("%Y-%m-%d %H:%M", time.gmtime(record.revoked_at)) if record.revoked_at else "active"
    )
    role = "approver" if record.approver else "full"
    return f"{record.id}  {record.prefix}…  project={record.project}  {role}  made {made}  {state}"
