"""A worker's part in running code (`sandbox/`), when this server runs code.

This machine is one host: its containers live under `SANDBOX_DIR`, and its id is kept there
(`host-id`), so a worker that starts again, or a second worker on the same directory, is the
same host and takes up its containers as they were. Its workers poll two queues: the
deployment's sandbox queue, where any host places a container that lives nowhere yet, and the
host's own, where the commands of its containers run.

Its chores (`HostChores`), on every round, for this host only: containers deleted, expired or
forgotten leave its disk (their processes killed), its containers idle past their
`expires_after` expire, never while a command of theirs runs, and an interpreter that no call
waits for is frozen. `ContainerChores` are the
cluster's, on one worker at a time: a container idle well past its expiry expires even if its
host is gone (nothing else would end it), and containers that ended a day ago are forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from temporalio.client import Client
from temporalio.worker import Worker

from activities.code_execution import CodeExecutionActivities
from activities.container_work import ContainerWork
from activities.shell_execution import ShellActivities
from guardrails.tool_outputs import ToolOutputs
from sandbox.containers import ContainerHost
from store.containers import Containers
from store.repository import ResponseRepository
from worker.housekeeping import keep_house
from worker.settings import Settings
from worker.versioning import WorkerVersioning

log = logging.getLogger(__name__)

HOST_ID_FILE = "host-id"
CHORE_SECONDS = 30.0
LOST_HOST_GRACE_SECONDS = 600
"""How long past its expiry a container's host has to expire it, before the cluster does."""
ENDED_KEPT_SECONDS = 24 * 3600
"""How long an ended container is still listed (as `expired`)."""
UNKNOWN_KEPT_SECONDS = 300.0
"""A container directory no row names is removed once it is this old (a new one's row may not
have been read yet)."""
MAX_CONCURRENT_COMMANDS = 200
"""Commands that run at once on one host: each only waits on its sandbox, so this bounds the
worker's polling, not the host's CPU (each container has its own cgroup)."""


def host_id(directory: Path) -> str:
    """This host's id, made on first use and kept in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / HOST_ID_FILE
    with contextlib.suppress(FileNotFoundError):
        kept = path.read_text().strip()
        if kept:
            return kept
    fresh = secrets.token_hex(8)
    with contextlib.suppress(FileExistsError), path.open("x") as file:
        file.write(fresh)
    return path.read_text().strip()


def _younger_than(path: Path, seconds: float) -> bool:
    try:
        return time.time() - path.stat().st_mtime < seconds
    except OSError:
        return False


class HostChores:
    def __init__(self, containers: Containers, host: ContainerHost, host_id: str) -> None:
        self.containers = containers
        self.host = host
        self.host_id = host_id

    async def round(self) -> None:
        """Each container's upkeep on its own: whatever one container's files make of it (they
        are a tenant's), the others' goes on."""
        now = time.time()
        rows = {row.id: row for row in await self.containers.of_host(self.host_id)}
        for row in list(rows.values()):
            async with _apart(row.id, "expiry"):
                idle = row.last_active_at + row.expires_after_minutes * 60 < now
                if row.status == "running" and idle and not (self.host.exists(row.id) and self.host.busy(row.id)):
                    await self.containers.end(row.id, "expired")
                    rows[row.id] = dataclasses.replace(row, status="expired")
                    log.info("container %s expired (idle past its expires_after)", row.id)
        for container_id in self.host.containers():
            found = rows.get(container_id)
            if found is None and _younger_than(self.host.directory(container_id), UNKNOWN_KEPT_SECONDS):
                continue  # placed since the rows were read
            if found is None or found.status != "running":
                async with _apart(container_id, "removal"):
                    await self.host.remove(container_id)
        for row in rows.values():
            async with _apart(row.id, "upkeep"):
                if row.status == "deleted":  # its host has removed it: nothing is left of it
                    await self.containers.forget(row.id)
                elif row.status == "running" and self.host.exists(row.id):
                    # No code runs between calls, whatever a call left behind (its activity freezes
                    # the interpreter as it ends; this is for one whose worker died before it did).
                    await asyncio.to_thread(self.host.freeze_interpreter, row.id)
        await asyncio.to_thread(self.host.sweep_cgroups)


@contextlib.asynccontextmanager
async def _apart(container_id: str, what: str) -> AsyncIterator[None]:
    """One container's chore, whose failure is logged and stops no other container's."""
    try:
        yield
    except Exception:  # noqa: BLE001 - a tenant's files may make any chore fail: the round goes on
        log.exception("container %s: its %s failed (the round goes on)", container_id, what)


class ContainerChores:
    def __init__(self, containers: Containers) -> None:
        self.containers = containers

    async def expire_abandoned(self) -> int:
        """Containers whose host did not expire them in time (or that never had one)."""
        now = int(time.time())
        unplaced = await self.containers.expire_idle(now, unplaced_only=True)
        abandoned = await self.containers.expire_idle(now, LOST_HOST_GRACE_SECONDS)
        forgotten = await self.containers.forget_ended(now - ENDED_KEPT_SECONDS)
        return len(unplaced) + len(abandoned) + forgotten


Work = TypeVar("Work", bound=ContainerWork)
"""The activities that work in this host's containers (code, shell)."""


@contextlib.asynccontextmanager
async def code_execution(
    client: Client,
    settings: Settings,
    repository: ResponseRepository,
    *,
    grace: timedelta,
    versioning: WorkerVersioning,
    outputs: ToolOutputs | None = None,
) -> AsyncIterator[list[Worker]]:
    """This host's workers for code, and its chores while they run (none when this server
    runs no code)."""
    execution = settings.execution.code_execution
    if execution is None or not settings.sandbox.enabled:
        yield []
        return
    egress = settings.sandbox.egress().closing(settings.deployment_endpoints())
    host = ContainerHost.open(settings.sandbox.directory, egress, settings.sandbox.uid_range())
    this_host = host_id(settings.sandbox.directory)

    def working_here(kind: type[Work]) -> Work:
        return kind(
            containers=repository.containers,
            files=repository.files,
            events=repository.events,
            cancels=repository.cancels,
            host=host,
            host_id=this_host,
            settings=settings.sandbox,
            quotas=settings.project_quotas,
            outputs=outputs,
        )

    activities = working_here(CodeExecutionActivities)
    shells = working_here(ShellActivities)
    workers = [
        Worker(
            client,
            task_queue=execution.sandbox_task_queue,
            **versioning,
            activities=[activities.place_container, activities.container_lost],
            graceful_shutdown_timeout=grace,
        ),
        Worker(
            client,
            task_queue=execution.host_task_queue(this_host),
            **versioning,
            activities=[activities.run_code, shells.run_shell],
            max_concurrent_activities=MAX_CONCURRENT_COMMANDS,
            graceful_shutdown_timeout=grace,
        ),
    ]
    stopping = asyncio.Event()
    chores = HostChores(repository.containers, host, this_host)
    keeping = asyncio.create_task(keep_house({"container upkeep": chores.round}, CHORE_SECONDS, stopping))
    try:
        yield workers
    finally:
        stopping.set()
        await keeping
