"""Sealing, pure: a sealed blob opens only for its purpose and project, no forged or altered one
opens, and a rotated ring still opens what older keys and versions sealed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.errors import SealedElsewhereError
from sealing.keyring import KeyRing, Purpose, new_master_key
from sealing.sealer import Sealer

PROJECTS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=0, max_size=20)


RING_KEY = new_master_key()


@settings(max_examples=200)
@given(
    data=st.binary(max_size=500),
    project=PROJECTS,
    other=PROJECTS,
    purpose=st.sampled_from(list(Purpose)),
    other_purpose=st.sampled_from(list(Purpose)),
)
def test_a_sealed_blob_opens_only_for_its_purpose_and_project(
    data: bytes,
    project: str,
    other: str,
    purpose: Purpose,
    other_purpose: Purpose,
):
    ring = KeyRing.parse(RING_KEY)
    blob = Sealer(ring, purpose).seal(data, project=project)
    assert Sealer(ring, purpose).open(blob, project=project) == data
    if other != project:
        with pytest.raises(SealedElsewhereError):
            Sealer(ring, purpose).open(blob, project=other)
    if other_purpose != purpose:
        with pytest.raises(SealedElsewhereError):
            Sealer(ring, other_purpose).open(blob, project=project)


@settings(max_examples=100)
@given(blob=st.text(max_size=300), project=PROJECTS)
def test_no_forged_or_altered_blob_opens(blob: str, project: str):
    ring = KeyRing.parse(RING_KEY)
    sealer = Sealer(ring, Purpose.REASONING)
    genuine = sealer.seal(b"secret", project=project)
    altered = genuine[:-2] + ("A" if genuine[-2] != "A" else "B") + genuine[-1]
    for candidate in (blob, f"dr1.{ring.sealing.id}.{blob}", altered):
        with pytest.raises(SealedElsewhereError):
            sealer.open(candidate, project=project)


def test_a_rotated_ring_still_opens_what_the_old_key_sealed():
    old, new = new_master_key(), new_master_key()
    sealed = Sealer(KeyRing.parse(old), Purpose.MCP_SECRETS).seal(b"header", project="p")
    rotated = KeyRing.parse(f"{new},{old}")
    assert Sealer(rotated, Purpose.MCP_SECRETS).open(sealed, project="p") == b"header"
    assert Sealer(rotated, Purpose.MCP_SECRETS).seal(b"x", project="p").startswith(f"dr1.{rotated.sealing.id}.")
    with pytest.raises(SealedElsewhereError):
        Sealer(KeyRing.parse(new), Purpose.MCP_SECRETS).open(sealed, project="p")


def test_what_earlier_versions_sealed_still_opens():
    """Before purpose keys, blobs were Fernet tokens under SECRETS_KEY itself: stored MCP
    secrets and webhook endpoints, and clients' reasoning, made then still open."""
    from cryptography.fernet import Fernet

    key = new_master_key()
    legacy = Fernet(key.encode()).encrypt(b"sealed last year").decode()
    assert Sealer(KeyRing.parse(key), Purpose.WEBHOOK_SECRETS).open(legacy, project="any") == b"sealed last year"
    with pytest.raises(SealedElsewhereError):
        Sealer(KeyRing.parse(new_master_key()), Purpose.WEBHOOK_SECRETS).open(legacy, project="any")
