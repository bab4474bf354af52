"""Containers as every surface makes them: the `/v1/containers` routes (`api/containers.py`)
and a response's `code_interpreter` and shell tools (`response_service/code_containers.py`).
A container's memory is at most the server's, its way out only to domains the egress guard
lets it reach, and the files it starts with are the project's."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from typing import Any

from starlette.requests import HTTPConnection

from http_plumbing.params import principal, project_quotas, repository
from models.containers import MEMORY_LIMITS, NetworkAllowlist
from models.errors import InvalidRequestError, NotFoundError
from models.ids import new_id
from models.quotas import ProjectQuota, QuotaExceededError
from sandbox.bubblewrap import DATA_MOUNT
from sandbox.egress_rules import SandboxEgress
from sandbox.settings import SandboxSettings
from store.containers import ContainerFileRow, ContainerRow, Containers
from store.files import Files


def file_not_found(file_id: str, param: str | None = None) -> NotFoundError:
    return NotFoundError(f"No such File object: {file_id}", param=param)


def container_not_found(container_id: str, param: str | None = "container_id") -> NotFoundError:
    return NotFoundError(f"Container with id '{container_id}' not found.", param=param)


async def check_container_options(
    sandbox: SandboxSettings, memory_limit: str, network_policy: Any, prefix: str = ""
) -> None:
    """What this server gives a container: memory up to `SANDBOX_MAX_MEMORY`, and a way out
    only to domains the container egress rules let it reach (`sandbox/egress_rules.py`: one
    that resolves to a private address is refused here; one that does not resolve now is
    checked again at each connection)."""
    most = sandbox.max_memory
    if MEMORY_LIMITS[memory_limit] > MEMORY_LIMITS[most]:
        raise InvalidRequestError(
            f"Invalid '{prefix}memory_limit': this server gives a container at most {most} (SANDBOX_MAX_MEMORY).",
            param=f"{prefix}memory_limit",
            code="invalid_value",
        )
    if isinstance(network_policy, NetworkAllowlist):
        egress = sandbox.egress()
        refused = await asyncio.gather(*(_refused(domain, egress) for domain in network_policy.allowed_domains))
        for index, (domain, no) in enumerate(zip(network_policy.allowed_domains, refused, strict=True)):
            if no:
                raise InvalidRequestError(
                    f"Invalid '{prefix}network_policy.allowed_domains[{index}]': {domain} resolves to an address "
                    "this server may not reach.",
                    param=f"{prefix}network_policy.allowed_domains[{index}]",
                    code="invalid_value",
                )


RESOLVE_SECONDS = 2.0


async def _refused(domain: str, egress: SandboxEgress) -> bool:
    """Whether `domain` resolves, now, to an address the container egress rules refuse on 443."""
    try:
        found = await asyncio.wait_for(
            asyncio.get_running_loop().getaddrinfo(domain, 443, type=socket.SOCK_STREAM), RESOLVE_SECONDS
        )
    except (OSError, UnicodeError, TimeoutError):
        return False
    addresses = {ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0]) for *_, sockaddr in found}
    return any(egress.refusal(domain, address, 443) is not None for address in addresses)


async def new_container(
    request: HTTPConnection,
    *,
    name: str,
    memory_limit: str,
    minutes: int,
    network_policy: dict[str, Any],
    file_ids: list[str],
    param: str,
    container_id: str | None = None,
) -> ContainerRow:
    """A container of the request's project, with copies of `file_ids` (named by `param`): one
    unit, so a copy refused (the project's bytes, the container's files) leaves no container,
    no file and no part behind."""
    project = principal(request).project
    store = repository(request)
    quotas = project_quotas(request)
    found = await store.files.some(file_ids, project) if file_ids else {}
    for index, file_id in enumerate(file_ids):
        if file_id not in found:
            raise file_not_found(file_id, f"{param}[{index}]")
    copied = sum(found[file_id].bytes for file_id in dict.fromkeys(file_ids))
    if copied > await store.files.bytes_left(project, quotas):
        raise QuotaExceededError(ProjectQuota.FILE_BYTES, quotas.max_file_bytes, param=param)
    now = int(time.time())
    row = ContainerRow(
        container_id or new_id("cntr"), project, name, memory_limit, minutes, network_policy, None, "running", now, now
    )
    await store.containers.create(row, quotas)
    copy = ""
    try:
        for file_id in dict.fromkeys(file_ids):
            source = found[file_id]
            copy = new_id("cfile")
            await store.files.copy_parts(file_id, copy)
            await store.containers.add_file(
                ContainerFileRow(copy, row.id, f"{DATA_MOUNT}/{source.filename}", source.bytes, "user", now, False),
                quotas,
            )
    except BaseException:
        await asyncio.shield(_discard(store.files, store.containers, row.id, copy))
        raise
    return row


async def _discard(files: Files, containers: Containers, container_id: str, copy: str) -> None:
    """The container made for a refused request, its files, and the parts of the copy that was
    being made when it was refused."""
    if copy:
        await files.drop_parts(copy)
    await containers.discard(container_id)
