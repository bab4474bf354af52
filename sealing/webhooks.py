"""Standard Webhooks signatures, exactly as OpenAI makes them: `webhook-signature: v1,<base64
HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the secret's bytes
(a `whsec_` secret is base64 after its prefix)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

PREFIX = "whsec_"
MIN_SECRET_BYTES = 24
"""Standard Webhooks asks for 24 to 64 random bytes."""


class InvalidWebhookSecret(ValueError):
    pass


def secret_bytes(secret: str) -> bytes:
    """The key of a `whsec_...` secret; refuses anything else (no unsigned or weakly signed events)."""
    if not secret.startswith(PREFIX):
        raise InvalidWebhookSecret(
            f"WEBHOOK_SECRET must start with '{PREFIX}' (make one with "
            f"`python -c \"import secrets, base64; print('{PREFIX}' + "
            'base64.b64encode(secrets.token_bytes(32)).decode())"`)'
        )
    try:
        key = base64.b64decode(secret[len(PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidWebhookSecret(f"WEBHOOK_SECRET must be base64 after '{PREFIX}'") from None
    if len(key) < MIN_SECRET_BYTES:
        raise InvalidWebhookSecret(f"WEBHOOK_SECRET must hold at least {MIN_SECRET_BYTES} random bytes, not {len(key)}")
    return key


def new_secret() -> str:
    return PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signature(key: bytes, webhook_id: str, timestamp: int, body: str) -> str:
    signed = f"{webhook_id}.{timestamp}.{body}".encode()
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
