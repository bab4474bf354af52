"""Containers a test made are removed when it ends: their interpreters outlive the worker
that started them (as they must), and their disks are mounts pytest cannot remove."""

from __future__ import annotations

from pathlib import Path

from sandbox.containers import ContainerHost


async def remove_containers(directory: Path) -> None:
    if not directory.is_dir():
        return
    host = ContainerHost.open(directory)
    for container_id in host.containers():
        await host.remove(container_id)
