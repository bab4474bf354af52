"""A response's `code_interpreter` call: its code run in its container's Python interpreter
(`workflows/container_calls.py`, `activities/code_execution.py`); a hosted tool's runner
(`workflows/hosted_calls.py`)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import RunCodeInput, RunCodeResult
    from models.code_items import CodeInterpreterCallItem
    from models.events import hosted_closing
    from models.history_budget import ToolResult
    from models.hosted_tools import MAX_CODE_CHARS
    from workflows.container_calls import NotRun, run_in_container, written
    from workflows.hosted_calls import HostedCall, Ran

INCLUDE_OUTPUTS = "code_interpreter_call.outputs"


async def code_interpreter(run: HostedCall, call: CodeInterpreterCallItem, index: int) -> Ran:
    if len(call.code or "") > MAX_CODE_CHARS:
        return await _not_run(run, call, index, f"the code is longer than {MAX_CODE_CHARS} characters; it was not run")
    execution = run.settings.code_execution
    seconds = execution.command_seconds if execution is not None else 0.0
    result = await run_in_container(
        run,
        call.container_id,
        activity_names.RUN_CODE,
        RunCodeInput(
            response_id=run.response.id,
            project=run.project,
            call=call,
            output_index=index,
            emit_events=run.emit_events,
            timeout_seconds=seconds,
            include_outputs=INCLUDE_OUTPUTS in run.response.include,
            moderation=run.held,
        ),
        RunCodeResult,
        seconds,
    )
    if isinstance(result, NotRun):
        return await _not_run(run, call, index, result.reason)
    return Ran(result.call, ToolResult(text=result.text), written(call.container_id, result.files), checked=result)


async def _not_run(run: HostedCall, call: CodeInterpreterCallItem, index: int, reason: str) -> Ran:
    ended = call.model_copy(update={"status": "failed"})
    await run.emit(hosted_closing(ended, index))
    return Ran(ended, ToolResult(text=f"Error: {reason}."))
