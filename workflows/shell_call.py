"""A response's hosted `shell` call: its commands run in its container, one after the other
(`workflows/container_calls.py`, `activities/shell_execution.py`), and a `shell_call_output`
item after the turn's calls says what each printed and how it ended; a hosted tool's runner
(`workflows/hosted_calls.py`)."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from models import activity_names
    from models.activity_io import RunShellInput, RunShellResult
    from models.code_items import ShellCallItem, ShellCallOutputItem
    from models.events import hosted_closing, shell_output_closing, shell_output_opening
    from models.history_budget import ToolResult
    from models.hosted_tools import MAX_COMMAND_CHARS, MAX_COMMANDS, MAX_COMMANDS_CHARS
    from workflows.container_calls import NotRun, run_in_container, written
    from workflows.hosted_calls import HostedCall, Ran


async def shell(run: HostedCall, call: ShellCallItem, index: int) -> Ran:
    output = ShellCallOutputItem(id=f"sho_{workflow.uuid4().hex}", call_id=call.call_id)
    follow_index = run.follow_index if run.follow_index is not None else index + 1
    refused = _refused(call)
    if refused is not None:
        return await _not_run(run, call, index, output, follow_index, refused)
    execution = run.settings.code_execution
    asked = (call.action.timeout_ms or 0) / 1000
    seconds = min(asked or execution.command_seconds, execution.max_command_seconds) if execution else 0.0
    result = await run_in_container(
        run,
        call.container_id,
        activity_names.RUN_SHELL,
        RunShellInput(
            response_id=run.response.id,
            project=run.project,
            call=call,
            output_index=index,
            output_item=output,
            output_item_index=follow_index,
            emit_events=run.emit_events,
            command_seconds=seconds,
            moderation=run.held,
        ),
        RunShellResult,
        seconds * len(call.action.commands),
    )
    if isinstance(result, NotRun):
        return await _not_run(run, call, index, output, follow_index, result.reason)
    return Ran(
        result.call,
        ToolResult(text=result.text),
        written(call.container_id, result.files),
        follows=result.output_item,
        checked=result,
    )


def _refused(call: ShellCallItem) -> str | None:
    commands = call.action.commands
    if not commands:
        return "the call has no commands"
    if len(commands) > MAX_COMMANDS:
        return f"a call may run at most {MAX_COMMANDS} commands"
    if any(len(command) > MAX_COMMAND_CHARS for command in commands):
        return f"a command may be at most {MAX_COMMAND_CHARS} characters"
    if sum(len(command) for command in commands) > MAX_COMMANDS_CHARS:
        return f"a call's commands may be at most {MAX_COMMANDS_CHARS} characters together"
    return None


async def _not_run(
    run: HostedCall, call: ShellCallItem, index: int, output: ShellCallOutputItem, follow_index: int, reason: str
) -> Ran:
    """The commands did not run, or how they ended is not known: the output says `incomplete`."""
    ended = call.model_copy(update={"status": "completed"})
    unknown = output.model_copy(update={"status": "incomplete"})
    await run.emit(
        hosted_closing(ended, index)
        + shell_output_opening(unknown, follow_index)
        + shell_output_closing(unknown, follow_index)
    )
    return Ran(ended, ToolResult(text=f"Error: {reason}."), follows=unknown)
