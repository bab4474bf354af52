"""The containers a response's `code_interpreter` and `shell` tools run in (`/v1/containers`).

A tool names a container by id (a running container of the key's project: otherwise a 404 that
names `tools[i].container`, or `tools[i].environment.container_id`) or asks for `"auto"`
(`container_auto`): the container another tool of this request gets, or the previous
response's, while it still runs and nothing else is asked of it (so a conversation keeps its
Python state and files, turn after turn, and its code and shell share one), or a new one made
for this response. The response's tools then name the container by its id, so the client
learns it. A shell the client runs (`local`, or no environment) needs none.

A new container is decided here, with the rest of the request's checks, and made only when the
response is kept (`make`); a request refused after that leaves none behind (`unmake`).
Where this server runs no code, `"auto"` stays as it is: the tool is accepted and not offered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.requests import HTTPConnection

from http_plumbing.params import plausible_id, repository
from models.containers import DEFAULT_EXPIRY_MINUTES, DEFAULT_MEMORY_LIMIT, network_policy_as_stored
from models.ids import new_id
from models.quotas import QuotaExceededError
from models.requests import CreateResponseRequest
from models.responses import Response
from models.tools import (
    CodeInterpreterAutoContainer,
    CodeInterpreterTool,
    ShellContainerAuto,
    ShellContainerReference,
    ShellLocalEnvironment,
    ShellTool,
)
from response_service.containers import check_container_options, container_not_found, file_not_found, new_container
from sandbox.settings import SandboxSettings
from store.containers import Containers
from store.files import Files


@dataclass(frozen=True)
class AutoContainer:
    """A container a request's `"auto"` asks to be made for it."""

    container_id: str
    tool_index: int
    memory_limit: str
    file_ids: list[str]
    network_policy: dict[str, Any]


async def code_containers(
    request: CreateResponseRequest,
    containers: Containers,
    files: Files,
    project: str,
    previous: Response | None,
    sandbox: SandboxSettings,
) -> tuple[CreateResponseRequest, list[AutoContainer]]:
    """The request with each `code_interpreter` tool's container named by id, and the
    containers to make for it."""
    tools = list(request.tools)
    made: list[AutoContainer] = []
    for index, tool in enumerate(tools):
        auto: CodeInterpreterAutoContainer | ShellContainerAuto | ShellContainerReference | ShellLocalEnvironment | None
        if isinstance(tool, CodeInterpreterTool):
            param, named, auto = f"tools[{index}].container", tool.container_id, tool.auto
        elif isinstance(tool, ShellTool) and tool.runs_here:  # a local shell is the client's
            param, named, auto = f"tools[{index}].environment", tool.container_id, tool.environment
            if named:
                param += ".container_id"
        else:
            continue
        if named:
            await _running(containers, named, project, param)
            continue
        assert isinstance(auto, (CodeInterpreterAutoContainer, ShellContainerAuto))
        await check_container_options(
            sandbox, auto.memory_limit or DEFAULT_MEMORY_LIMIT, auto.network_policy, f"{param}."
        )
        await _files_exist(files, auto.file_ids or [], project, f"{param}.file_ids")
        if not sandbox.enabled:
            continue
        container_id = await _kept_or_new(containers, previous, project, auto, made, index)
        tools[index] = _naming(tool, container_id)
    return request.model_copy(update={"tools": tools}), made


async def _kept_or_new(
    containers: Containers,
    previous: Response | None,
    project: str,
    auto: CodeInterpreterAutoContainer | ShellContainerAuto,
    made: list[AutoContainer],
    index: int,
) -> str:
    """The container an `auto` gets: one another tool of this request is getting, the previous
    response's, or a new one."""
    if _plain(auto):
        if (
            made
            and not made[0].file_ids
            and made[0].memory_limit == DEFAULT_MEMORY_LIMIT
            and not made[0].network_policy.get("allowed_domains")
        ):
            return made[0].container_id  # code_interpreter and shell share it, as one conversation's
        kept = await _previous_container(containers, previous, project)
        if kept is not None:
            return kept
    container_id = new_id("cntr")
    made.append(
        AutoContainer(
            container_id,
            index,
            auto.memory_limit or DEFAULT_MEMORY_LIMIT,
            auto.file_ids or [],
            network_policy_as_stored(auto.network_policy),
        )
    )
    return container_id


def _naming(tool: CodeInterpreterTool | ShellTool, container_id: str) -> CodeInterpreterTool | ShellTool:
    if isinstance(tool, CodeInterpreterTool):
        return tool.model_copy(update={"container": container_id})
    return tool.model_copy(
        update={"environment": ShellContainerReference(type="container_reference", container_id=container_id)}
    )


def _plain(auto: CodeInterpreterAutoContainer | ShellContainerAuto) -> bool:
    """Asks nothing a container kept from before might not have."""
    return not auto.file_ids and auto.memory_limit is None and auto.network_policy is None


async def _running(containers: Containers, container_id: str, project: str, param: str) -> None:
    found = await containers.get(container_id, project) if plausible_id(container_id) else None
    if found is None or found.status != "running":
        raise container_not_found(container_id, param)


async def _files_exist(files: Files, file_ids: list[str], project: str, param: str) -> None:
    found = await files.some(file_ids, project) if file_ids else {}
    for index, file_id in enumerate(file_ids):
        if file_id not in found:
            raise file_not_found(file_id, f"{param}[{index}]")


async def _previous_container(containers: Containers, previous: Response | None, project: str) -> str | None:
    """The previous response's code interpreter container, while it runs."""
    for tool in previous.tools if previous is not None else []:
        if isinstance(tool, (CodeInterpreterTool, ShellTool)) and tool.container_id:
            found = await containers.get(tool.container_id, project)
            if found is not None and found.status == "running":
                return found.id
    return None


async def make(request: HTTPConnection, response_id: str, made: list[AutoContainer]) -> None:
    """Make the response's new containers (a project at its quota of containers is refused
    here, before the response is kept, naming the tool whose container would pass it)."""
    try:
        for auto in made:
            await _made(request, response_id, auto)
    except BaseException:
        await unmake(repository(request).containers, [auto.container_id for auto in made])
        raise


async def _made(request: HTTPConnection, response_id: str, auto: AutoContainer) -> None:
    try:
        await new_container(
            request,
            name=f"code_interpreter for {response_id}",
            memory_limit=auto.memory_limit,
            minutes=DEFAULT_EXPIRY_MINUTES,
            network_policy=auto.network_policy,
            file_ids=auto.file_ids,
            param=f"tools[{auto.tool_index}].container.file_ids",
            container_id=auto.container_id,
        )
    except QuotaExceededError as error:
        if error.param is not None:  # its files' quota, named already
            raise
        raise QuotaExceededError(error.quota, error.limit, param=f"tools[{auto.tool_index}].container") from None


async def unmake(containers: Containers, container_ids: list[str]) -> None:
    """The response was refused after its containers were made: they go (no host has them yet)."""
    for container_id in container_ids:
        await containers.discard(container_id)
