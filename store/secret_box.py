"""Seals the secrets clients send for MCP servers before they are stored, and the reasoning a
client without state carries between requests (`reasoning.encrypted_content`).

Fernet (AES-128-CBC with HMAC-SHA256) from `cryptography`, keyed by `SECRETS_KEY`. The API
seals; workers open. Both must be given the same key (`durable-responses dev` keeps one in
its data directory).
"""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken

from models.errors import SecretsUnavailableError
from models.tools import McpSecrets


class SecretBox:
    def __init__(self, key: str) -> None:
        self._fernet = Fernet(key.encode())

    @staticmethod
    def new_key() -> str:
        return Fernet.generate_key().decode()

    def seal(self, secrets: McpSecrets) -> str:
        return self._fernet.encrypt(secrets.model_dump_json().encode()).decode()

    def seal_text(self, text: str) -> str:
        return self._fernet.encrypt(text.encode()).decode()

    def open_text(self, sealed: str) -> str | None:
        """The text, or None when it was not sealed with this key (another server's)."""
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except (InvalidToken, ValueError):
            return None

    def open(self, sealed: str) -> McpSecrets:
        try:
            return McpSecrets.model_validate_json(self._fernet.decrypt(sealed.encode()))
        except InvalidToken:
            raise SecretsUnavailableError(
                "the MCP secrets of this response were sealed with another SECRETS_KEY"
            ) from None
