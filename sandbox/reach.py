"""Files within a sandbox's reach, as the worker (root, on the host) handles them.

Code in a container can write anything where it may write: a file the worker is about to
read may be a symbolic link to the host's `/etc/shadow`, a directory a link to `/etc`, a name
the worker is about to write a link to a file the worker must never touch. So under a
`root` the worker trusts (a directory the sandbox sees as a mount point, which code inside
cannot replace), every path is opened a component at a time from the directory before it,
none followed if it is a link (`O_NOFOLLOW`); a file is read only if it is a regular file, and
written by renaming a fresh one into place (a link at the name is replaced, never written
through).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from sandbox.identity import Identity

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(relative: str) -> list[str]:
    parts = [part for part in relative.split("/") if part]
    if any(part in (".", "..") for part in parts):
        raise ValueError(f"not a plain relative path: {relative!r}")
    return parts


@contextlib.contextmanager
def _directory(root: Path, parts: list[str], *, create: bool = False, owner: Identity | None = None) -> Iterator[int]:
    """The directory `root/parts...` open, reached without following a link (each one it makes
    given to `owner`)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                    if owner is not None:
                        os.chown(part, owner.uid, owner.gid, dir_fd=fd, follow_symlinks=False)
            next_fd = os.open(part, DIRECTORY_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        yield fd
    finally:
        os.close(fd)


def read(root: Path, relative: str, offset: int = 0, limit: int = 1 << 20) -> bytes:
    """Up to `limit` bytes of a regular file from `offset`; nothing when it is missing, is not
    a regular file, or a link is on the way."""
    parts = _parts(relative)
    try:
        with _directory(root, parts[:-1]) as directory:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.pread(fd, limit, offset)
    except OSError:
        return b""
    finally:
        os.close(fd)


def write(root: Path, relative: str, data: bytes, owner: Identity | None = None) -> None:
    """A file whole at once (readers see it all or not at all), its directories made; it and
    they given to `owner`."""
    parts = _parts(relative)
    with _directory(root, parts[:-1], create=True, owner=owner) as directory:
        fresh = f".{parts[-1]}.{secrets.token_hex(6)}.tmp"
        fd = os.open(
            fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=directory
        )
        try:
            if owner is not None:
                os.fchown(fd, owner.uid, owner.gid)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(fresh, parts[-1], src_dir_fd=directory, dst_dir_fd=directory)


def exists(root: Path, relative: str) -> bool:
    """Whether something is at the path (a link counts; nothing is followed)."""
    parts = _parts(relative)
    try:
        with _directory(root, parts[:-1]) as directory:
            os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
    except OSError:
        return False
    return True


def modified_ns(root: Path, relative: str) -> int:
    """When the thing at the path last changed (0 when nothing is there)."""
    parts = _parts(relative)
    try:
        with _directory(root, parts[:-1]) as directory:
            return os.stat(parts[-1], dir_fd=directory, follow_symlinks=False).st_mtime_ns
    except OSError:
        return 0


def names(root: Path, relative: str = "") -> list[str]:
    """The names in a directory (none when it is missing or a link)."""
    try:
        with _directory(root, _parts(relative)) as directory:
            return os.listdir(directory)
    except OSError:
        return []


def remove(root: Path, relative: str) -> None:
    """Remove a file or link (a directory stays)."""
    parts = _parts(relative)
    with contextlib.suppress(OSError), _directory(root, parts[:-1]) as directory:
        os.unlink(parts[-1], dir_fd=directory)


def make_directory(root: Path, relative: str, owner: Identity | None = None) -> None:
    with _directory(root, _parts(relative), create=True, owner=owner):
        pass
