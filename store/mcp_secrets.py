"""The secrets (MCP `headers` and `authorization`) a request carried for its MCP servers:
sealed for the response's project when it is created, opened only by the activity that talks
to the server, and deleted when the response ends (`sealing/secret_box.py`)."""

from __future__ import annotations

from models.errors import SecretsUnavailableError
from models.tools import McpSecrets
from sealing.secret_box import SecretBox
from store.database import Database


class McpSecretsStore:
    def __init__(self, db: Database, secret_box: SecretBox | None) -> None:
        self.db = db
        self.secret_box = secret_box

    def seal(self, secrets: McpSecrets, project: str) -> str:
        if self.secret_box is None:
            raise SecretsUnavailableError("no SECRETS_KEY is configured, so MCP secrets cannot be kept")
        return self.secret_box.seal(secrets, project=project)

    async def opened(self, response_id: str, server_label: str) -> McpSecrets | None:
        """The secrets a response carried for one server (None when it carried none)."""
        async with self.db.read() as transaction:
            row = await transaction.one(
                "SELECT s.sealed, r.project FROM mcp_secrets s JOIN responses r ON r.id = s.response_id "
                "WHERE s.response_id = :id AND s.server_label = :label",
                id=response_id,
                label=server_label,
            )
        if row is None:
            return None
        if self.secret_box is None:
            raise SecretsUnavailableError("no SECRETS_KEY is configured, so MCP secrets cannot be opened")
        secrets, resealed = self.secret_box.open_for_use(row["sealed"], project=row["project"])
        if resealed is not None:  # sealed by a version before purpose keys: kept in today's format from now on
            async with self.db.write() as transaction:
                await transaction.run(
                    "UPDATE mcp_secrets SET sealed = :new WHERE response_id = :id AND server_label = :label "
                    "AND sealed = :old",
                    new=resealed,
                    id=response_id,
                    label=server_label,
                    old=row["sealed"],
                )
        return secrets
