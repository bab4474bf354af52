"""Containers a test made are removed when it ends: their interpreters outlive the worker
that started them (as they must), and their disks are mounts pytest cannot remove. A test
that runs code in them skips on a host without bubblewrap, as `.ci/run` says it does."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox import bubblewrap
from sandbox.containers import ContainerHost

needs_bubblewrap = pytest.mark.skipif(
    bubblewrap.bwrap_path() is None, reason="no bubblewrap here (Debian's package `bubblewrap`; .ci/run installs it)"
)


async def remove_containers(directory: Path) -> None:
    if not directory.is_dir():
        return
    await remove_everything(ContainerHost.open(directory))


async def remove_everything(host: ContainerHost) -> None:
    """A test's host gone for good: its containers, and its own cgroup."""
    for container_id in host.containers():
        await host.remove(container_id)
    if host.cgroups is not None:
        host.cgroups.retire()
