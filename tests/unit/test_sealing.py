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


def test_what_earlier_versions_sealed_opens_only_for_purposes_and_projects_that_existed_then():
    """Before purpose keys, blobs were Fernet tokens under SECRETS_KEY itself, with no purpose
    and no project: they once opened under any purpose, for any project. Now one opens for a
    purpose that existed then, and for a project whose first key came before it was sealed (or
    the open server's), and `open_for_use` gives it back sealed in today's format."""
    from cryptography.fernet import Fernet

    from sealing.sealer import LegacyBlobs

    key = new_master_key()
    written_at = 1_700_000_000
    legacy = Fernet(key.encode()).encrypt_at_time(b"sealed last year", written_at).decode()
    rules = LegacyBlobs(project_births={"old": written_at - 86_400, "new": written_at + 86_400})
    ring = KeyRing.parse(key)
    webhooks = Sealer(ring, Purpose.WEBHOOK_SECRETS, rules)
    for project in ("old", ""):
        data, resealed = webhooks.open_for_use(legacy, project=project)
        assert data == b"sealed last year" and resealed is not None and resealed.startswith("dr1.")
        assert webhooks.open_for_use(resealed, project=project) == (b"sealed last year", None)
    for project in ("new", "never-had-a-key"):
        with pytest.raises(SealedElsewhereError):
            webhooks.open(legacy, project=project)
    for purpose in (Purpose.COMPACTION, Purpose.PAYLOADS):  # no such purpose before purpose keys
        with pytest.raises(SealedElsewhereError):
            Sealer(ring, purpose, rules).open(legacy, project="old")
    with pytest.raises(SealedElsewhereError):
        Sealer(KeyRing.parse(new_master_key()), Purpose.WEBHOOK_SECRETS, rules).open(legacy, project="old")
