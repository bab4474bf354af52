"""The master key ring and the keys derived from it.

`SECRETS_KEY` is one master key, or several separated by commas: the first seals, every one
opens, so a key is rotated by putting a new one in front and dropping the old one once nothing
sealed with it is left. A master key is 32 random bytes in URL-safe base64 (Fernet's form,
which `durable-responses dev` and earlier versions made).

Nothing is sealed with a master key itself. Each purpose gets its own 256-bit key, derived with
HKDF-SHA256, so a blob sealed for one purpose (an MCP header) cannot be passed off as another
(a reasoning blob), and a leaked purpose key opens nothing else.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import secrets
from dataclasses import dataclass, field
from enum import Enum

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from models.errors import StartupError


class Purpose(str, Enum):
    MCP_SECRETS = "mcp-secrets"
    """MCP `headers` and `authorization` a request carried (`store/repository.py`)."""
    WEBHOOK_SECRETS = "webhook-secrets"
    """A webhook endpoint's URL and signing secret (`store/webhooks.py`)."""
    REASONING = "reasoning"
    """`reasoning.encrypted_content` handed to clients that keep no state."""
    COMPACTION = "compaction"
    """A `compaction` item's summary of an earlier context (`context/compaction.py`)."""
    PAYLOADS = "payloads"
    """Temporal payloads (`sealing/payload_codec.py`)."""


def new_master_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


@dataclass(frozen=True)
class MasterKey:
    secret: bytes = field(repr=False)

    @functools.cached_property
    def id(self) -> str:
        """Names the key in what it sealed (8 hex characters), without saying anything of it
        (worked out once: every payload sealed and opened names its key)."""
        return hashlib.sha256(b"durable-responses key id\0" + self.secret).hexdigest()[:8]

    def derive(self, purpose: Purpose) -> bytes:
        return HKDF(
            algorithm=hashes.SHA256(), length=32, salt=None, info=b"durable-responses/" + purpose.value.encode()
        ).derive(self.secret)

    @property
    def fernet_form(self) -> bytes:
        """The key as Fernet takes it, to open what versions before purpose keys sealed."""
        return base64.urlsafe_b64encode(self.secret)


class KeyRing:
    def __init__(self, keys: list[MasterKey]) -> None:
        if not keys:
            raise ValueError("a key ring needs a key")
        self.keys = keys
        self._derived: dict[tuple[str, Purpose], bytes] = {}

    @classmethod
    def parse(cls, setting: str) -> KeyRing:
        """`SECRETS_KEY`: comma-separated master keys, the sealing one first."""
        keys = []
        for position, text in enumerate(part.strip() for part in setting.split(",")):
            try:
                secret = base64.urlsafe_b64decode(text.encode())
            except (binascii.Error, ValueError):
                secret = b""
            if len(secret) != 32:
                raise StartupError(
                    f"SECRETS_KEY: key {position + 1} is not 32 bytes of URL-safe base64 "
                    "(make one with: python -c 'import base64,os; "
                    "print(base64.urlsafe_b64encode(os.urandom(32)).decode())')"
                )
            keys.append(MasterKey(secret))
        return cls(keys)

    @property
    def sealing(self) -> MasterKey:
        return self.keys[0]

    def key(self, key_id: str, purpose: Purpose) -> bytes | None:
        """The purpose key of the master key `key_id`, if it is in the ring."""
        for master in self.keys:
            if master.id == key_id:
                cached = self._derived.get((key_id, purpose))
                if cached is None:
                    cached = self._derived[(key_id, purpose)] = master.derive(purpose)
                return cached
        return None
