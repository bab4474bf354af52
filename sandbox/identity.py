"""Whom a container's code runs as on the host: an unprivileged uid of its own.

bwrap started by root with `--unshare-user` maps the sandbox's user to the host's uid 0: the
kernel's owner checks then see root, and a tenant could write `/proc/sys/kernel/core_pattern`
or `chmod` the host's `/dev/null`. So a worker that is root gives every container a uid (and
a gid of the same number) from a range no host file belongs to (`SANDBOX_UIDS`), drops to it
before it starts bwrap, and bwrap (unprivileged then) maps the sandbox's user to it. A worker
that is not root runs bwrap as itself.

A container's uid is claimed once, by a file in `<root>/.uids/` made exclusively (two workers
on one `SANDBOX_DIR` never claim the same), kept in the container's directory (`identity`), and
let go when the container is removed, after everything of it has been killed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import pwd
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_UIDS = "1879048192-1879113727"
"""65,536 uids where systemd's allocation plan keeps nothing (between its container ranges and
the signed-overflow zone): no distribution gives them to a user or a file."""
RESERVED = frozenset({0, 65534, 65535, 2**32 - 1})
"""root, nobody (and the overflow uid), and the invalid uid."""
STALE_CLAIM_SECONDS = 600.0
IDENTITY_FILE = "identity"
CLAIMS = ".uids"


class IdentityError(ValueError):
    """A uid range that cannot be used, or one with no uid left: its message names why."""


@dataclass(frozen=True)
class Identity:
    uid: int
    gid: int

    def text(self) -> str:
        return f"{self.uid} {self.gid}"

    @classmethod
    def parse(cls, text: str) -> Identity | None:
        parts = text.split()
        if len(parts) != 2 or not all(part.isdigit() for part in parts):
            return None
        return cls(int(parts[0]), int(parts[1]))


@dataclass(frozen=True)
class UidRange:
    first: int
    last: int

    @property
    def size(self) -> int:
        return self.last - self.first + 1

    @classmethod
    def parse(cls, text: str) -> UidRange:
        """`FIRST-LAST`, checked: never 0 or another reserved uid, never a user's of this host."""
        first_text, dash, last_text = text.strip().partition("-")
        if not dash or not first_text.isdigit() or not last_text.isdigit():
            raise IdentityError(f"SANDBOX_UIDS must be FIRST-LAST (two whole numbers), not {text!r}")
        found = cls(int(first_text), int(last_text))
        if not 1000 <= found.first <= found.last < 2**31:
            raise IdentityError("SANDBOX_UIDS must lie between 1000 and 2147483647, FIRST no larger than LAST")
        if found.size < 16:
            raise IdentityError("SANDBOX_UIDS must hold at least 16 uids (one a container)")
        taken = sorted(uid for uid in RESERVED | {os.getuid()} | _users() if found.first <= uid <= found.last)
        if taken:
            raise IdentityError(f"SANDBOX_UIDS holds uid {taken[0]}, which belongs to this host already")
        return found


def _users() -> set[int]:
    """The uids this host's user database names (a uid that owns files has a name, as a rule)."""
    with contextlib.suppress(OSError):
        return {entry.pw_uid for entry in pwd.getpwall()}
    return set()


class Identities:
    """The uids of one host's containers (`root`: its `SANDBOX_DIR`)."""

    def __init__(self, root: Path, uids: UidRange) -> None:
        self.uids = uids
        self.claims = root / CLAIMS
        self.claims.mkdir(parents=True, exist_ok=True)
        os.chmod(self.claims, 0o700)

    @staticmethod
    def of(home: Path) -> Identity | None:
        """The identity of the container at `home`, if it was given one."""
        try:
            return Identity.parse((home / IDENTITY_FILE).read_text())
        except OSError:
            return None

    def claim(self, container_id: str, home: Path) -> Identity:
        """The container's identity: the one it has, or a uid of the range no container holds."""
        kept = self.of(home)
        if kept is not None:
            return kept
        start = int.from_bytes(hashlib.sha256(container_id.encode()).digest()[:8], "big") % self.uids.size
        for step in range(self.uids.size):
            uid = self.uids.first + (start + step) % self.uids.size
            if self._take(uid, container_id):
                identity = Identity(uid, uid)
                fresh = home / f".{IDENTITY_FILE}.tmp"
                fresh.write_text(identity.text())
                os.replace(fresh, home / IDENTITY_FILE)
                return identity
        raise IdentityError(f"every uid of SANDBOX_UIDS ({self.uids.first}-{self.uids.last}) is in use")

    def release(self, container_id: str, identity: Identity) -> None:
        """Let the container's uid go (everything of it has been killed, its files removed)."""
        claim = self.claims / str(identity.uid)
        with contextlib.suppress(OSError):
            if claim.read_text() == container_id:
                claim.unlink()

    def _take(self, uid: int, container_id: str) -> bool:
        claim = self.claims / str(uid)
        try:
            fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return self._take_over(uid, container_id)
        with os.fdopen(fd, "w") as file:
            file.write(container_id)
        return True

    def _take_over(self, uid: int, container_id: str) -> bool:
        """Claim `uid` in place of a stale claim: under a lock every taker over shares, so two
        never both find it stale and both take it (a fresh claim is made with `O_EXCL` alone,
        and so never replaces one)."""
        with open(self.claims / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            claim = self.claims / str(uid)
            if not self._stale(claim):
                return False
            with contextlib.suppress(FileNotFoundError):
                claim.unlink()
            try:
                fd = os.open(claim, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return False
            with os.fdopen(fd, "w") as file:
                file.write(container_id)
            return True

    def _stale(self, claim: Path) -> bool:
        """A claim whose container's directory is gone (a worker died between removing it and
        letting its uid go), old enough that no container being made now holds it."""
        try:
            holder = claim.read_text().strip()
            age = time.time() - claim.stat().st_mtime
        except OSError:
            return False
        return age > STALE_CLAIM_SECONDS and not (self.claims.parent / holder).exists()
