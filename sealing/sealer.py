"""Sealed blobs: AES-256-GCM under a purpose key, bound to a project.

A blob is `dr1.<key id>.<base64url(nonce || ciphertext || tag)>`. The purpose and the project
are its associated data: they are not in the blob, but opening it under another purpose or
for another project fails, so one tenant cannot replay another's sealed reasoning or secrets.

Blobs sealed by versions before this format (Fernet under the master key) carry neither a
purpose nor a project, only the time they were written. One opens only as `LegacyBlobs`
allows: for a purpose that existed then (MCP secrets, webhook secrets, reasoning), and for a
project that existed then (its first key was made before the blob was written; the open
server's project always did). `open_for_use` hands back the same bytes sealed anew, for a
store row to keep instead.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from models.errors import SealedElsewhereError
from sealing.keyring import KeyRing, Purpose

FORMAT = "dr1"
NONCE_BYTES = 12
OPEN_PROJECT = ""
"""The project of every request while a server runs open (`store.schema.NO_PROJECT`)."""
CLOCK_SKEW_SECONDS = 300
"""How far apart the clocks of the process that made a key and the one that sealed may be."""


@dataclass(frozen=True)
class LegacyBlobs:
    """Which blobs of the format before `dr1` may open: by purpose, and by when each project
    came to be (`KeyStore.project_births`: its first key's time; read when the process starts,
    which is enough: a project made since could not have had a blob in the old format)."""

    purposes: frozenset[Purpose] = frozenset({Purpose.MCP_SECRETS, Purpose.WEBHOOK_SECRETS, Purpose.REASONING})
    project_births: Mapping[str, int] = field(default_factory=dict)

    def opens(self, purpose: Purpose, project: str, written_at: int) -> bool:
        if purpose not in self.purposes:
            return False
        if project == OPEN_PROJECT:
            return True
        born = self.project_births.get(project)
        return born is not None and born <= written_at + CLOCK_SKEW_SECONDS


def associated_data(purpose: Purpose, project: str) -> bytes:
    return f"{FORMAT}\0{purpose.value}\0{project}".encode()


class Sealer:
    """Seals and opens the blobs of one purpose."""

    def __init__(self, ring: KeyRing, purpose: Purpose, legacy: LegacyBlobs | None = None) -> None:
        self.ring = ring
        self.purpose = purpose
        self.legacy = legacy or LegacyBlobs()
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
        return self.open_for_use(blob, project=project)[0]

    def open_for_use(self, blob: str, *, project: str) -> tuple[bytes, str | None]:
        """The sealed bytes, and, when the blob is in the format before `dr1`, the same bytes
        sealed anew (for a row to keep instead; None when the blob is current)."""
        if not blob.startswith(FORMAT + "."):
            data = self._open_legacy(blob, project)
            return data, self.seal(data, project=project)
        return self._open_current(blob, project), None

    def _open_current(self, blob: str, project: str) -> bytes:
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

    def _open_legacy(self, blob: str, project: str) -> bytes:
        try:
            written_at = self._legacy.extract_timestamp(blob.encode())
            data = self._legacy.decrypt(blob.encode())
        except (InvalidToken, ValueError):
            raise SealedElsewhereError("sealed with a key this server does not have") from None
        if not self.legacy.opens(self.purpose, project, written_at):
            raise SealedElsewhereError(
                f"sealed in the old format, which opens for no {self.purpose.value} of this project"
            )
        return data
