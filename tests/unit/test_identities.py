"""Containers' uids (`sandbox/identity.py`): a range that names a host user or root is refused
at start; each container gets a uid no other container holds, also when workers on one
`SANDBOX_DIR` claim at once, and also when they race to take over a claim left stale by a
worker that died; a uid is free again once its container is released."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from sandbox.identity import CLAIMS, STALE_CLAIM_SECONDS, Identities, IdentityError, UidRange

SIXTEEN = "1879048192-1879048207"


@pytest.mark.parametrize(
    "text", ["0-100", "1000", "a-b", "2000-1000", "1879048192-1879048193", f"{os.getuid()}-{os.getuid() + 20}"]
)
def test_a_range_that_cannot_be_used_is_refused(text: str):
    with pytest.raises(IdentityError, match="SANDBOX_UIDS"):
        UidRange.parse(text)


def test_each_container_its_own_uid_and_a_released_one_free_again(tmp_path: Path):
    identities = Identities(tmp_path, UidRange.parse(SIXTEEN))
    homes = {f"cntr_{n:016x}": tmp_path / f"cntr_{n:016x}" for n in range(16)}
    for home in homes.values():
        home.mkdir()
    given = {name: identities.claim(name, home) for name, home in homes.items()}
    assert len({identity.uid for identity in given.values()}) == 16
    assert identities.claim("cntr_0000000000000000", homes["cntr_0000000000000000"]) == given["cntr_0000000000000000"]
    (tmp_path / "cntr_extra").mkdir()
    with pytest.raises(IdentityError, match="in use"):
        identities.claim("cntr_extra", tmp_path / "cntr_extra")
    identities.release("cntr_0000000000000003", given["cntr_0000000000000003"])
    assert identities.claim("cntr_extra", tmp_path / "cntr_extra").uid == given["cntr_0000000000000003"].uid


def _claim(root: str, name: str, start: float, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    home = Path(root) / name
    home.mkdir()
    time.sleep(max(0.0, start - time.time()))
    try:
        out.put((name, Identities(Path(root), UidRange.parse(SIXTEEN)).claim(name, home).uid))
    except IdentityError:
        out.put((name, None))


def test_racing_takers_over_of_a_stale_claim_never_share_it(tmp_path: Path):
    """Fifteen uids held, the sixteenth's claim left stale by a container that is gone: of eight
    workers claiming at the same instant, one gets it, the rest none."""
    identities = Identities(tmp_path, UidRange.parse(SIXTEEN))
    for n in range(15):
        (tmp_path / f"cntr_held{n}").mkdir()
        identities.claim(f"cntr_held{n}", tmp_path / f"cntr_held{n}")
    held = {int(path.name) for path in (tmp_path / CLAIMS).iterdir() if path.name.isdigit()}
    free = next(uid for uid in range(1879048192, 1879048208) if uid not in held)
    stale = tmp_path / CLAIMS / str(free)
    stale.write_text("cntr_gone")
    past = time.time() - STALE_CLAIM_SECONDS - 60
    os.utime(stale, (past, past))
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    start = time.time() + 0.5
    workers = [context.Process(target=_claim, args=(str(tmp_path), f"cntr_racer{n}", start, out)) for n in range(8)]
    for worker in workers:
        worker.start()
    results = [out.get(timeout=30) for _ in workers]
    for worker in workers:
        worker.join(10)
    winners = [name for name, uid in results if uid is not None]
    assert len(winners) == 1 and dict(results)[winners[0]] == free, results
