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
    a regular file, a link is on the way, or the path is not plain (a name the sandbox wrote)."""
    try:
        parts = _parts(relative)
        with _directory(root, parts[:-1]) as directory:
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=directory)
    except (OSError, ValueError):
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
    try:
        parts = _parts(relative)
        with _directory(root, parts[:-1]) as directory:
            os.stat(parts[-1], dir_fd=directory, follow_symlinks=False)
    except (OSError, ValueError):
        return False
    return True


def modified_ns(root: Path, relative: str) -> int:
    """When the thing at the path last changed (0 when nothing is there)."""
    try:
        parts = _parts(relative)
        with _directory(root, parts[:-1]) as directory:
            return os.stat(parts[-1], dir_fd=directory, follow_symlinks=False).st_mtime_ns
    except (OSError, ValueError):
        return 0


def names(root: Path, relative: str = "") -> list[str]:
    """The names in a directory (none when it is missing or a link)."""
    try:
        with _directory(root, _parts(relative)) as directory:
            return os.listdir(directory)
    except (OSError, ValueError):
        return []


def remove(root: Path, relative: str) -> None:
    """Remove a file or link (a directory stays)."""
    with contextlib.suppress(OSError, ValueError), _directory(root, _parts(relative)[:-1]) as directory:
        os.unlink(_parts(relative)[-1], dir_fd=directory)


def give(root: Path, relative: str, owner: Identity) -> None:
    """The thing at the path (a link itself, not what it names) given to `owner`."""
    parts = _parts(relative)
    with _directory(root, parts[:-1]) as directory:
        os.chown(parts[-1], owner.uid, owner.gid, dir_fd=directory, follow_symlinks=False)


def make_directory(root: Path, relative: str, owner: Identity | None = None) -> None:
    with _directory(root, _parts(relative), create=True, owner=owner):
        pass


MAX_DEPTH = 64
"""How deep a walk goes (deeper directories are not walked: code may nest thousands)."""


def walk(root: Path, *, hidden: bool = True, max_depth: int = MAX_DEPTH) -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under `root` (its path relative to `root`, and what `lstat` says of it),
    following no link, without recursion, at most `max_depth` directories deep; names starting
    with a dot, and what is under them, are left out unless `hidden`."""
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            with _directory(root, _parts(relative)) as directory, os.scandir(directory) as entries:
                for entry in entries:
                    if not hidden and entry.name.startswith("."):
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    path = f"{relative}/{entry.name}" if relative else entry.name
                    yield path, info
                    if stat.S_ISDIR(info.st_mode) and path.count("/") + 1 < max_depth:
                        pending.append(path)
        except (OSError, ValueError):
            continue


def remove_tree(root: Path) -> None:
    """Remove `root` and everything under it, however deep (code may nest directories deeper
    than a path may name, or than `shutil.rmtree` recurses), following no link; each directory
    is listed once (what cannot be removed, a mount point, stays)."""
    try:
        top = os.open(root, DIRECTORY_FLAGS)
    except OSError:
        return
    stack: list[tuple[int, Iterator[str], str]] = [(top, iter(_listed(top)), "")]
    try:
        while stack:
            fd, names, _ = stack[-1]
            name = next(names, None)
            if name is None:
                _, _, own = stack.pop()
                os.close(fd)
                if stack:
                    with contextlib.suppress(OSError):
                        os.rmdir(own, dir_fd=stack[-1][0])
                continue
            try:
                if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    child = os.open(name, DIRECTORY_FLAGS, dir_fd=fd)
                    stack.append((child, iter(_listed(child)), name))
                else:
                    os.unlink(name, dir_fd=fd)
            except OSError:
                continue
    finally:
        for fd, _, _ in stack:
            os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(root)


def _listed(fd: int) -> list[str]:
    try:
        return os.listdir(fd)
    except OSError:
        return []
