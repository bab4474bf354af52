"""A response's `code_interpreter` call: its container placed on a host (any worker that runs
code takes it, if it lives nowhere yet), then the code run on that host's own queue, where the
container's interpreter and files are (`activities/code_execution.py`, `sandbox/`); a hosted
tool's runner (`workflows/hosted_calls.py`).

A host whose worker does not take the command within `host_wait_seconds` is taken to be gone:
the container expires with it, and the model is told.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import (
        ContainerLostInput,
        ContainerLostResult,
        PlaceContainerInput,
        PlaceContainerResult,
        RunCodeInput,
        RunCodeResult,
    )
    from models.events import hosted_closing
    from models.history_budget import ToolResult
    from models.items import CodeInterpreterCallItem
    from models.search import Source
    from workflows.failures import host_is_gone
    from workflows.hosted_calls import HostedCall, Ran, failed
    from workflows.options import place_container_options, run_command_options

INCLUDE_OUTPUTS = "code_interpreter_call.outputs"


async def code_interpreter(run: HostedCall, call: CodeInterpreterCallItem, index: int) -> Ran:
    execution = run.settings.code_execution
    if execution is None or not call.container_id:  # the API offers the tool only where code runs
        return await _ended(run, call, index, "Error: this server runs no code.")
    try:
        placed = await workflow.execute_activity(
            activity_names.PLACE_CONTAINER,
            PlaceContainerInput(container_id=call.container_id),
            result_type=PlaceContainerResult,
            **place_container_options(execution),
        )
    except ActivityError as error:
        return await failed(error, run, call, index)
    if placed.host is None:
        return await _ended(run, call, index, "Error: the container is gone (it expired or was deleted).")
    try:
        result = await workflow.execute_activity(
            activity_names.RUN_CODE,
            RunCodeInput(
                response_id=run.response.id,
                project=run.project,
                call=call,
                output_index=index,
                emit_events=run.emit_events,
                timeout_seconds=execution.command_seconds,
                include_outputs=INCLUDE_OUTPUTS in run.response.include,
            ),
            result_type=RunCodeResult,
            **run_command_options(execution, placed.host, execution.command_seconds),
        )
    except ActivityError as error:
        if not host_is_gone(error):
            return await failed(error, run, call, index)
        await workflow.execute_activity(
            activity_names.CONTAINER_LOST,
            ContainerLostInput(container_id=call.container_id, host=placed.host),
            result_type=ContainerLostResult,
            **place_container_options(execution),
        )
        return await _ended(
            run,
            call,
            index,
            f"Error: the container's host did not answer for {execution.host_wait_seconds:g} s: the container "
            "is gone with its files and Python state.",
        )
    written = [
        Source(
            number=0,
            container_id=call.container_id,
            file_id=file.file_id,
            path=file.path,
            filename=file.path.rsplit("/", 1)[-1],
        )
        for file in result.files
    ]
    return Ran(result.call, ToolResult(text=result.text), written)


async def _ended(run: HostedCall, call: CodeInterpreterCallItem, index: int, told: str) -> Ran:
    ended = call.model_copy(update={"status": "failed"})
    await run.emit(hosted_closing(ended, index))
    return Ran(ended, ToolResult(text=told))
