"""A container's files, kept the same on its host (`/mnt/data`) and in the store (where any API
process serves them): before a command, what was uploaded comes in and what was deleted goes;
after it, what the command wrote comes out as the container's files (`source: assistant`).

What code inside wrote is hostile: a file may be a symbolic link to the host's `/etc/shadow`,
a directory a link to `/etc`. Nothing here follows a link: directories are walked by their
file descriptors (`sandbox/reach.walk`), files opened relative to them with `O_NOFOLLOW`, and only
regular files are read; a file brought in replaces whatever was at its path (a link is
unlinked, never written through), and only at the top of `/mnt/data`. A manifest beside the
container's files (out of its reach) says what was synced, and how it looked then.

What comes out counts against the project's byte quota (its uploads and its containers' files
together), by the bytes actually copied: a sparse file costs its whole length. A copy stops at
the most it may take, whatever the file does meanwhile (one still growing is not kept, nor is
anything after it in that sync). A file that is not kept, or whose name is not UTF-8, stays on
the container's disk only, and the model is told (`TakenOut.notes`).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from file_search.limits import LIMITS
from models.activity_io import ContainerFileCreated
from models.errors import ContainerEndedError
from models.ids import new_id
from models.quotas import ProjectQuotas, QuotaExceededError
from sandbox import reach
from sandbox.bubblewrap import DATA_MOUNT
from sandbox.containers import ContainerHost
from sandbox.identity import Identity
from store.containers import ContainerFileRow, Containers
from store.files import PART_BYTES, Files, TooManyBytes

MAX_FILES_SEEN = 2_000
"""Files a sync looks at, at most (what code made past it stays on the host only)."""
MAX_NOTES = 20


@dataclass(frozen=True)
class TakenOut:
    files: list[ContainerFileCreated] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What was not kept, and why: one line each, for the model."""

    def told(self) -> str:
        return "".join(f"\nNote: {note}" for note in self.notes)


@dataclass(frozen=True)
class Seen:
    file_id: str
    size: int
    modified_ns: int


class ContainerFiles:
    def __init__(self, containers: Containers, files: Files, host: ContainerHost, disk_bytes: int) -> None:
        self.containers = containers
        self.stored_files = files
        """The files' bytes, as `/v1/files` keeps them."""
        self.host = host
        self.disk_bytes = disk_bytes
        """What one sync copies out at most: no more than the container's disk holds (its
        sparse files' lengths may add up to far more)."""

    def _manifest_path(self, container_id: str) -> Path:
        return self.host.directory(container_id) / "manifest.json"

    def _manifest(self, container_id: str) -> dict[str, Seen]:
        """What was synced, if it was synced with the files on disk now: a manifest of another
        disk (the tmpfs was mounted again after the host restarted, and its files are gone)
        says nothing, and every file comes in again."""
        try:
            said: dict[str, Any] = json.loads(self._manifest_path(container_id).read_text())
            if said.get("device") != os.stat(self.host.data(container_id)).st_dev:
                return {}
            return {path: Seen(**entry) for path, entry in said["files"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def _save(self, container_id: str, manifest: dict[str, Seen]) -> None:
        path = self._manifest_path(container_id)
        fresh = path.with_name(".manifest.json.tmp")
        device = os.stat(self.host.data(container_id)).st_dev
        fresh.write_text(json.dumps({"device": device, "files": {key: vars(value) for key, value in manifest.items()}}))
        os.replace(fresh, path)

    async def bring_in(self, container_id: str) -> None:
        """The store's files on the host: uploads written in, deletions carried out."""
        rows = await self.containers.files(container_id)
        manifest = self._manifest(container_id)
        data = self.host.data(container_id)
        owner = self.host.identity(container_id)
        kept = {row.id for row in rows}
        for path, seen in list(manifest.items()):
            if seen.file_id not in kept:
                await asyncio.to_thread(_remove, data, path)
                del manifest[path]
        for row in rows:
            if row.path in manifest and manifest[row.path].file_id == row.id:
                continue
            name = row.path.removeprefix(f"{DATA_MOUNT}/")
            if "/" in name or not name or name.startswith("."):
                continue  # only the top of /mnt/data is written
            size, modified = await _write(data, name, self.stored_files.parts(row.id), owner)
            manifest[row.path] = Seen(row.id, size, modified)
            await self.containers.synced(row.id)
        self._save(container_id, manifest)

    async def take_out(self, container_id: str, quotas: ProjectQuotas) -> TakenOut:
        """What the last command wrote, kept as the container's files; what it removed, gone."""
        manifest = self._manifest(container_id)
        on_disk, unreadable = await asyncio.to_thread(_regular_files, self.host.data(container_id))
        taken = TakenOut(
            notes=[f"{name} has a name that is not UTF-8: it stays on the container only" for name in unreadable]
        )
        container = await self.containers.get(container_id)
        left = await self.stored_files.bytes_left(container.project, quotas) if container is not None else 0
        sync_left = self.disk_bytes
        for path in [path for path in manifest if path not in on_disk]:
            await self.containers.delete_file(container_id, manifest.pop(path).file_id)
        for path, (size, modified) in sorted(on_disk.items()):
            seen = manifest.get(path)
            if seen is not None and (seen.size, seen.modified_ns) == (size, modified):
                continue
            seen_bytes = await self._kept_bytes(seen)
            most = min(LIMITS.max_file_bytes, left + seen_bytes, sync_left)
            if size > most:
                taken.notes.append(_not_kept(path, size, LIMITS.max_file_bytes, sync_left))
                continue
            file_id = new_id("cfile")
            try:
                written = await self.stored_files.write_parts(
                    file_id, _read(self.host.data(container_id), path), most=most
                )
            except TooManyBytes:
                taken.notes.append(
                    f"{path} grew past {most} bytes as it was copied: it and the files after it stay on the container only"
                )
                break
            row = ContainerFileRow(file_id, container_id, path, written, "assistant", int(time.time()), True)
            try:
                await self.containers.add_file(row, quotas)
            except QuotaExceededError as refused:
                await self.stored_files.drop_parts(file_id)
                taken.notes.append(f"{path} was not kept: {refused}")
                continue
            except ContainerEndedError:  # deleted while the command ran: nothing more is kept
                await self.stored_files.drop_parts(file_id)
                taken.notes.append("the container was deleted while the command ran: its files were not kept")
                break
            except Exception:
                await self.stored_files.drop_parts(file_id)
                raise
            left -= written - seen_bytes
            sync_left -= written
            manifest[path] = Seen(file_id, size, modified)
            taken.files.append(ContainerFileCreated(file_id=file_id, path=path))
        self._save(container_id, manifest)
        return taken

    async def _kept_bytes(self, seen: Seen | None) -> int:
        """What the store keeps of the file this one takes the place of (it frees that much)."""
        if seen is None:
            return 0
        kept = await self.containers.file_size(seen.file_id)
        return kept or 0


def _inside(path: str) -> str:
    return path.removeprefix(f"{DATA_MOUNT}/")


def _not_kept(path: str, size: int, largest: int, sync_left: int) -> str:
    if size > largest:
        return f"{path} ({size} bytes) is larger than a kept file may be ({largest}): it stays on the container only"
    if size > sync_left:
        return (
            f"{path} ({size} bytes) was not kept: the files of one command may together be no larger than the "
            "container's disk (a sparse file counts its whole length)"
        )
    return (
        f"{path} ({size} bytes) was not kept: the project keeps all the bytes its quota allows (PROJECT_MAX_FILE_BYTES)"
    )


def _is_text(name: str) -> bool:
    """Whether a name read from the disk is UTF-8 (one that is not holds surrogates here)."""
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def _regular_files(data: Path) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """Every regular file under `data` (as `/mnt/data/...`), with its size and time, walked
    without following a link and at most `reach.MAX_DEPTH` deep; hidden ones (a name, or a
    directory's, starting with a dot: caches and settings) are not the container's files. And
    the names passed over because they are not UTF-8 (shown with their bytes escaped)."""
    found: dict[str, tuple[int, int]] = {}
    unreadable: list[str] = []
    for relative, info in reach.walk(data, hidden=False):
        if not stat.S_ISREG(info.st_mode):
            continue
        if not _is_text(relative):
            if len(unreadable) < MAX_NOTES:
                unreadable.append(f"{DATA_MOUNT}/{relative.encode(errors='backslashreplace').decode()}")
            continue
        found[f"{DATA_MOUNT}/{relative}"] = (info.st_size, info.st_mtime_ns)
        if len(found) >= MAX_FILES_SEEN:
            break
    return found, unreadable


async def _read(data: Path, path: str) -> AsyncIterator[bytes]:
    """A regular file's bytes, a part at a time, opened without following any link on the way."""
    parts = _inside(path).split("/")
    fd = os.open(data, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            next_fd = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        file_fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        if not stat.S_ISREG(os.fstat(file_fd).st_mode):
            return
        while piece := await asyncio.to_thread(os.read, file_fd, PART_BYTES):
            yield piece
    finally:
        os.close(file_fd)


async def _write(data: Path, name: str, parts: AsyncIterator[bytes], owner: Identity | None) -> tuple[int, int]:
    """Write a file at the top of `data`, in place of whatever is there (a link is removed, not
    followed), owned by whom the container's code runs as; its size and time."""
    await asyncio.to_thread(_remove, data, f"{DATA_MOUNT}/{name}")
    directory = os.open(data, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=directory)
    finally:
        os.close(directory)
    size = 0
    try:
        if owner is not None:
            os.fchown(fd, owner.uid, owner.gid)
        async for piece in parts:
            await asyncio.to_thread(os.write, fd, piece)
            size += len(piece)
        info = os.fstat(fd)
    finally:
        os.close(fd)
    return size, info.st_mtime_ns


def _remove(data: Path, path: str) -> None:
    name = _inside(path)
    if "/" in name:
        return
    directory = os.open(data, os.O_RDONLY | os.O_DIRECTORY)
    try:
        info = os.stat(name, dir_fd=directory, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            return
        os.unlink(name, dir_fd=directory)
    except FileNotFoundError:
        pass
    finally:
        os.close(directory)
