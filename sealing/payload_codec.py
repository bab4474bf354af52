"""The payload codec: every payload the server's Temporal client writes (workflow inputs and
results, activity inputs and results, signals, queries, updates, memos, failure messages) is
sealed with AES-256-GCM under the ring's payload key, so Temporal's history holds nothing
readable: not the input, the instructions, the model's output, tool arguments and results,
approval reasons or MCP server URLs.

An encoded payload's data is `nonce || ciphertext || tag` of the whole original payload
(metadata included); its metadata says `encoding: binary/encrypted` and which master key
sealed it (`encryption-key-id`), so a rotated ring still opens old histories. Payloads that
are not encrypted (histories from before the codec) pass through decoding unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from models.errors import SealedElsewhereError
from sealing.keyring import KeyRing, Purpose

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
NONCE_BYTES = 12
ASSOCIATED_DATA = b"durable-responses temporal payload"


class EncryptedPayloads(PayloadCodec):
    def __init__(self, ring: KeyRing, *, encrypt: bool = True) -> None:
        self.ring = ring
        self._ciphers: dict[str, AESGCM] = {}
        """Each master key's payload cipher, by key id (made once: every payload uses one)."""
        self.encrypt = encrypt
        """False: payloads are written in clear but still read either way (the first step of
        turning encryption on across a fleet, `PAYLOAD_ENCRYPTION=off`)."""

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        if not self.encrypt:
            return list(payloads)
        key_id = self.ring.sealing.id
        cipher = self._cipher(key_id)
        assert cipher is not None  # the sealing key is the ring's first
        named = key_id.encode()
        sealed = []
        for payload in payloads:
            nonce = os.urandom(NONCE_BYTES)
            data = nonce + cipher.encrypt(nonce, payload.SerializeToString(), ASSOCIATED_DATA)
            sealed.append(Payload(metadata={"encoding": ENCODING, KEY_ID: named}, data=data))
        return sealed

    def _cipher(self, key_id: str) -> AESGCM | None:
        """The payload cipher of the ring's master key `key_id`; None if it is not in the ring."""
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            key = self.ring.key(key_id, Purpose.PAYLOADS)
            if key is None:
                return None
            cipher = self._ciphers[key_id] = AESGCM(key)
        return cipher

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        return [self.open(payload) for payload in payloads]

    def open(self, payload: Payload) -> Payload:
        if payload.metadata.get("encoding") != ENCODING:
            return payload
        key_id = payload.metadata.get(KEY_ID, b"").decode(errors="replace")
        cipher = self._cipher(key_id)
        if cipher is None:
            raise SealedElsewhereError(f"a Temporal payload sealed with a key not in SECRETS_KEY (key id {key_id!r})")
        try:
            plain = cipher.decrypt(payload.data[:NONCE_BYTES], payload.data[NONCE_BYTES:], ASSOCIATED_DATA)
        except InvalidTag:
            raise SealedElsewhereError(f"a Temporal payload that key {key_id!r} did not seal") from None
        opened = Payload()
        opened.ParseFromString(plain)
        return opened
