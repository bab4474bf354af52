"""Sealed blobs: AES-256-GCM under a purpose key, bound to a project.

A blob is `dr1.<key id>.<base64url(nonce || ciphertext || tag)>`. The purpose and the project
are its associated data: they are not in the blob, but opening it under another purpose or
for another project fails, so one tenant cannot replay another's sealed reasoning or secrets.
Blobs sealed by versions before this format (Fernet under the master key) still open, once,
for the store's rows and clients' reasoning that predate it; they carry no project.
"""

from __future__ import annotations

import base64
import binascii
import os

from cryptography.exceptions import InvalidTag
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from models.errors import SealedElsewhereError
from sealing.keyring import KeyRing, Purpose

FORMAT = "dr1"
NONCE_BYTES = 12


def associated_data(purpose: Purpose, project: str) -> bytes:
    return f"{FORMAT}\0{purpose.value}\0{project}".encode()


class Sealer:
    """Seals and opens the blobs of one purpose."""

    def __init__(self, ring: KeyRing, purpose: Purpose) -> None:
        self.ring = ring
        self.purpose = purpose
        self._legacy = MultiFernet([Fernet(master.fernet_form) for master in ring.keys])

    def seal(self, data: bytes, *, project: str) -> str:
        master = self.ring.sealing
        key = self.ring.key(master.id, self.purpose)
        assert key is not None
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(key).encrypt(nonce, data, associated_data(self.purpose, project))
        return f"{FORMAT}.{master.id}.{base64.urlsafe_b64encode(nonce + sealed).decode().rstrip('=')}"

    def open(self, blob: str, *, project: str) -> bytes:
        """The sealed bytes; `SealedElsewhereError` unless this ring sealed them for this
        purpose and project."""
        if not blob.startswith(FORMAT + "."):
            return self._open_legacy(blob)
        _, key_id, body = (blob.split(".", 2) + ["", ""])[:3]
        key = self.ring.key(key_id, self.purpose)
        if key is None:
            raise SealedElsewhereError(f"sealed with a key this server does not have (key id {key_id!r})")
        try:
            raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
            return AESGCM(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], associated_data(self.purpose, project))
        except (binascii.Error, ValueError, IndexError):
            raise SealedElsewhereError("not a sealed blob") from None
        except InvalidTag:  # another project's, purpose's, or altered
            raise SealedElsewhereError(f"not sealed for this {self.purpose.value} of this project") from None

    def _open_legacy(self, blob: str) -> bytes:
        try:
            return self._legacy.decrypt(blob.encode())
        except (InvalidToken, ValueError):
            raise SealedElsewhereError("sealed with a key this server does not have") from None
