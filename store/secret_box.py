"""Seals the secrets clients send for MCP servers before they are stored.

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

    def open(self, sealed: str) -> McpSecrets:
        try:
            return McpSecrets.model_validate_json(self._fernet.decrypt(sealed.encode()))
        except InvalidToken:
            raise SecretsUnavailableError(
                "the MCP secrets of this response were sealed with another SECRETS_KEY"
            ) from None
