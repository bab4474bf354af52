"""What every activity that works in this host's containers shares (`activities/code_execution.py`,
`activities/shell_execution.py`): the host, its id, the sandbox settings, a container's
limits, its files' sync, and the rhythm of a command's wait (heartbeats; the container
touched so it does not expire while the command runs)."""

from __future__ import annotations

import time

from temporalio import activity

from activities.container_files import ContainerFiles
from guardrails.tool_outputs import ToolOutputs
from models.containers import MEMORY_LIMITS
from models.events import StreamEvent
from models.quotas import ProjectQuotas
from sandbox.containers import ContainerHost, ContainerLimits
from sandbox.settings import SandboxSettings
from store.cancels import CancelRequests
from store.containers import ContainerRow, Containers
from store.event_log import EventLog
from store.files import Files

HEARTBEAT_EVERY_SECONDS = 2.0
TOUCH_EVERY_SECONDS = 60.0
"""A container whose command runs is in use: it does not expire meanwhile."""
SHOWN_CHARS = 16_000
"""What of a command's output the model is shown (its start and its end, past this)."""


def shown(output: str, chars: int = SHOWN_CHARS) -> str:
    if len(output) <= chars:
        return output
    half = chars // 2
    return f"{output[:half]}\n[... {len(output) - chars} characters left out ...]\n{output[-half:]}"


class ContainerWork:
    def __init__(
        self,
        *,
        containers: Containers,
        files: Files,
        events: EventLog,
        cancels: CancelRequests,
        host: ContainerHost,
        host_id: str,
        settings: SandboxSettings,
        quotas: ProjectQuotas,
        outputs: ToolOutputs | None = None,
    ) -> None:
        self.containers = containers
        self.outputs = outputs or ToolOutputs(None)
        """Checks a command's output before any of it is sent, under an `output: block` plan."""
        self.events = events
        self.cancels = cancels
        self.host = host
        self.host_id = host_id
        self.settings = settings
        self.quotas = quotas
        self.files = ContainerFiles(containers, files, host, settings.disk_bytes)

    def limits(self, row: ContainerRow) -> ContainerLimits:
        policy = row.network_policy
        domains = policy.get("allowed_domains") if policy.get("type") == "allowlist" else None
        return ContainerLimits(
            memory_bytes=MEMORY_LIMITS[row.memory_limit],
            disk_bytes=self.settings.disk_bytes,
            output_bytes=self.settings.output_bytes,
            allowed_domains=tuple(domain for domain in domains or [] if isinstance(domain, str)),
        )

    async def container(self, container_id: str) -> ContainerRow | None:
        """The container, if it still runs here (its commands run nowhere else)."""
        row = await self.containers.get(container_id)
        return row if row is not None and row.status == "running" and row.host == self.host_id else None

    async def emit(self, response_id: str, events: list[StreamEvent], *, once: bool = True) -> None:
        """`once`: steps that happen once each (kept once however often they are emitted);
        otherwise as they come (output deltas)."""
        batch = [event.wire() for event in events]
        if once:
            await self.events.append_once(response_id, batch)
        else:
            await self.events.append(response_id, batch)


class Rhythm:
    """A command's wait: a heartbeat now and then (with what the retried activity needs to go
    on from), and the container touched."""

    def __init__(self, containers: Containers, container_id: str) -> None:
        self.containers = containers
        self.container_id = container_id
        self.beat = self.touched = time.monotonic()

    async def keep(self, *details: object) -> None:
        now = time.monotonic()
        if now - self.touched >= TOUCH_EVERY_SECONDS:
            await self.containers.touch(self.container_id)
            self.touched = now
        if now - self.beat >= HEARTBEAT_EVERY_SECONDS:
            activity.heartbeat(*details)
            self.beat = now
