"""The secrets the server keeps for clients, sealed by purpose and bound to their project:
MCP `headers` and `authorization`, webhook URLs and signing secrets, the reasoning a client
without state carries between requests (`reasoning.encrypted_content`), and the summaries in
`compaction` items.

The API seals; workers open. Both must be given the same `SECRETS_KEY` (`durable-responses
dev` keeps one in its data directory).
"""

from __future__ import annotations

from models.errors import SealedElsewhereError, SecretsUnavailableError
from models.tools import McpSecrets
from sealing.keyring import KeyRing, Purpose, new_master_key
from sealing.sealer import FORMAT, LegacyBlobs, Sealer


def is_current(sealed: str) -> bool:
    """Whether a blob is in the current format (one that is not is sealed anew on first use)."""
    return sealed.startswith(FORMAT + ".")


class SecretBox:
    def __init__(self, key: str | KeyRing, legacy: LegacyBlobs | None = None) -> None:
        """`legacy`: which blobs of the format before `dr1` open (`sealing/sealer.py`)."""
        self.ring = key if isinstance(key, KeyRing) else KeyRing.parse(key)
        self.mcp = Sealer(self.ring, Purpose.MCP_SECRETS, legacy)
        self.webhooks = Sealer(self.ring, Purpose.WEBHOOK_SECRETS, legacy)
        self.reasoning = Sealer(self.ring, Purpose.REASONING, legacy)
        self.compaction = Sealer(self.ring, Purpose.COMPACTION, legacy)

    @staticmethod
    def new_key() -> str:
        return new_master_key()

    def seal(self, secrets: McpSecrets, *, project: str) -> str:
        return self.mcp.seal(secrets.model_dump_json().encode(), project=project)

    def open(self, sealed: str, *, project: str) -> McpSecrets:
        return self.open_for_use(sealed, project=project)[0]

    def open_for_use(self, sealed: str, *, project: str) -> tuple[McpSecrets, str | None]:
        """The secrets, and the blob sealed anew when `sealed` is in the old format."""
        try:
            data, resealed = self.mcp.open_for_use(sealed, project=project)
        except SealedElsewhereError as error:
            raise SecretsUnavailableError(f"the MCP secrets of this response cannot be opened: {error}") from None
        return McpSecrets.model_validate_json(data), resealed

    def seal_webhook_text(self, text: str, *, project: str) -> str:
        return self.webhooks.seal(text.encode(), project=project)

    def open_webhook_text(self, sealed: str, *, project: str) -> str | None:
        """The text, or None when this server did not seal it for this project."""
        return _text_or_none(self.webhooks, sealed, project)

    def seal_reasoning(self, text: str, *, project: str) -> str:
        return self.reasoning.seal(text.encode(), project=project)

    def open_reasoning(self, sealed: str, *, project: str) -> str | None:
        """The reasoning, or None when this server did not seal it for this project."""
        return _text_or_none(self.reasoning, sealed, project)

    def seal_compaction(self, content: bytes, *, project: str) -> str:
        return self.compaction.seal(content, project=project)

    def open_compaction(self, sealed: str, *, project: str) -> bytes | None:
        """The content, or None when this server did not seal it for this project."""
        try:
            return self.compaction.open(sealed, project=project)
        except SealedElsewhereError:
            return None


def _text_or_none(sealer: Sealer, sealed: str, project: str) -> str | None:
    try:
        return sealer.open(sealed, project=project).decode()
    except SealedElsewhereError:
        return None
