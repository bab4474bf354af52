"""A command of a hosted tool that runs in a container (`code_interpreter`, `shell`): the
container placed on a host (any worker that runs code takes it, if it lives nowhere yet), then
the command run on that host's own queue, where the container's processes and files are
(`activities/code_execution.py`, `activities/shell_execution.py`, `sandbox/`).

A host whose worker does not take the command within `host_wait_seconds` is taken to be gone:
the container expires with it, and the call says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, is_cancelled_exception

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import (
        ContainerFileCreated,
        ContainerLostInput,
        ContainerLostResult,
        PlaceContainerInput,
        PlaceContainerResult,
    )
    from models.search import Source
    from workflows.failures import application_failure, host_is_gone, is_cancel_request
    from workflows.hosted_calls import HostedCall
    from workflows.options import place_container_options, run_command_options

Result = TypeVar("Result")
GONE = "the container is gone (it expired or was deleted)"


@dataclass(frozen=True)
class NotRun:
    """Why a command did not run, or how it was lost: what the model is told."""

    reason: str


async def run_in_container(
    run: HostedCall, container_id: str, activity: str, request: Any, result_type: type[Result], seconds: float
) -> Result | NotRun:
    """`activity` with `request` on the container's host, within `seconds` (and its margins);
    a cancel goes on up."""
    execution = run.settings.code_execution
    if execution is None or not container_id:  # the API offers these tools only where code runs
        return NotRun("this server runs no code")
    try:
        placed = await workflow.execute_activity(
            activity_names.PLACE_CONTAINER,
            PlaceContainerInput(container_id=container_id),
            result_type=PlaceContainerResult,
            **place_container_options(execution),
        )
    except ActivityError as error:
        if is_cancelled_exception(error) or is_cancel_request(error):
            raise
        return NotRun(f"no worker that runs code took the container within {execution.host_wait_seconds:g} s")
    if placed.host is None:
        return NotRun(GONE)
    try:
        result: Result = await workflow.execute_activity(
            activity, request, result_type=result_type, **run_command_options(execution, placed.host, seconds)
        )
        return result
    except ActivityError as error:
        if is_cancelled_exception(error) or is_cancel_request(error):
            raise
        if not host_is_gone(error):
            failure = application_failure(error)
            return NotRun(failure.message if failure else str(error.cause or error))
    await workflow.execute_activity(
        activity_names.CONTAINER_LOST,
        ContainerLostInput(container_id=container_id, host=placed.host),
        result_type=ContainerLostResult,
        **place_container_options(execution),
    )
    return NotRun(
        f"the container's host did not answer for {execution.host_wait_seconds:g} s: the container is gone with "
        "its files and processes, and whether the command ran is not known"
    )


def written(container_id: str, files: list[ContainerFileCreated]) -> list[Source]:
    """The files a command wrote, as what the answer may cite (`container_file_citation`)."""
    return [
        Source(
            number=0,
            container_id=container_id,
            file_id=file.file_id,
            path=file.path,
            filename=file.path.rsplit("/", 1)[-1],
        )
        for file in files
    ]
