"""A webhook endpoint sealed by a version before purpose keys is sealed anew on its first use:
its URL and secret open for its project (it existed then) and its row holds them in today's
format from then on; for a project that came later, nothing opens. SQLite, in seconds."""

from __future__ import annotations

import time

from cryptography.fernet import Fernet

from models.quotas import ProjectQuotas
from sealing.keyring import new_master_key
from sealing.sealer import LegacyBlobs
from sealing.secret_box import SecretBox
from store.database import Database
from store.webhooks import WebhookEndpoints


async def test_an_endpoint_sealed_the_old_way_is_sealed_anew_on_first_use(database: Database):
    key = new_master_key()
    then = int(time.time()) - 2 * 86_400
    box = SecretBox(key, LegacyBlobs(project_births={"old": then - 60, "late": then + 86_400}))
    endpoints = WebhookEndpoints(database, box)
    made = {}
    for project in ("old", "late"):
        row, _ = await endpoints.create(
            project,
            name="hooks",
            url="https://hooks.example/x",
            event_types=["response.completed"],
            quotas=ProjectQuotas(),
        )
        made[project] = row.id
        legacy = Fernet(key.encode())
        async with database.write() as transaction:  # as a version before purpose keys left it
            await transaction.run(
                "UPDATE webhook_endpoints SET url_sealed = :url, secret_sealed = :secret WHERE id = :id",
                url=legacy.encrypt_at_time(b"https://hooks.example/x", then).decode(),
                secret=legacy.encrypt_at_time(b"whsec_" + b"A" * 32, then).decode(),
                id=row.id,
            )

    found = await endpoints.get("old", made["old"])
    assert found is not None and found.url == "https://hooks.example/x"
    async with database.read() as transaction:
        row = await transaction.one(
            "SELECT url_sealed, secret_sealed FROM webhook_endpoints WHERE id = :id", id=made["old"]
        )
    assert row["url_sealed"].startswith("dr1.") and row["secret_sealed"].startswith("dr1.")
    assert (await endpoints.signing(made["old"])) is not None

    late = await endpoints.get("late", made["late"])  # the project came after the blob was sealed
    assert late is not None and late.url == ""
    assert await endpoints.signing(made["late"]) is None
