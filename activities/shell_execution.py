"""The hosted `shell`, as an activity: a call's commands run one after the other in its
container (`sandbox/containers.py`: each `bash -c` behind bubblewrap's walls, in the
container's cgroup), their output streamed as it comes, their ends collected.

Each command is a run on the host's disk (`sandbox/runs.py`) named by the call's id and the
command's place, started once: an attempt after a worker's death (kill -9 included) finds it
running, or ended, and goes on from there, streaming the output the last attempt had not
(its heartbeat says how far it had got). So a command runs once however often the activity is
tried. A command whose end is unknown (its launcher is gone without a status: the host
restarted) is not run again, nor are the commands after it: the output item is `incomplete`
and the model is told. A command past its time is killed (outcome `timeout`); a response
cancelled while one runs kills it; a worker that stops leaves it running, for the next.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from dataclasses import dataclass, field

from temporalio import activity

from activities.cancel_watch import unless_cancelled
from activities.container_work import ContainerWork, Rhythm, shown
from models import activity_names
from models.activity_io import RunShellInput, RunShellResult
from models.code_items import ShellCallItem, ShellCommandOutput, ShellExit, ShellTimeout
from models.errors import CancelRequestedError
from models.events import (
    ShellOutputDelta,
    ShellOutputDeltaEvent,
    StreamEvent,
    shell_call_events,
    shell_output_closing,
    shell_output_opening,
)
from sandbox.runs import Run, RunOutcome
from store.containers import ContainerRow

ITEM_OUTPUT_CHARS = 256 * 1024
"""What the output item keeps of all its commands' output together (it travels through
Temporal): each stream of each command gets its share, its start and end kept; the stream's
deltas carry all the run kept (`SANDBOX_OUTPUT_BYTES` a stream)."""
DELTA_EVERY_SECONDS = 0.25
SIGNAL_EXIT = 128
SHOWN_CHARS_PER_COMMAND = 16_000
"""What of each command's output the model is shown at most (less, if it asks)."""


@dataclass
class Following:
    """How far the stream's deltas have gone, per command (what a heartbeat carries)."""

    sent: dict[str, dict[str, int]] = field(default_factory=dict)

    def of(self, index: int) -> dict[str, int]:
        return self.sent.setdefault(str(index), {})


@dataclass(frozen=True)
class Ended:
    outputs: list[ShellCommandOutput]
    texts: list[str]
    lost: bool


class ShellActivities(ContainerWork):
    @activity.defn(name=activity_names.RUN_SHELL)
    async def run_shell(self, request: RunShellInput) -> RunShellResult:
        call = request.call.model_copy(update={"status": "completed"})
        row = await self.container(call.container_id)
        if request.emit_events:
            await self.emit(request.response_id, self._opening(request, call))
        if row is None:
            return await self._result(request, call, Ended([], [], lost=True), "the container is gone")
        try:
            ended = await unless_cancelled(self.cancels.notifier, request.response_id, self._run(request, row))
        except CancelRequestedError:
            self._kill(row.id, call)
            raise
        except asyncio.CancelledError:
            if not activity.is_worker_shutdown():  # the response was cancelled; a worker that stops leaves it running
                self._kill(row.id, call)
            raise
        taken = await self.files.take_out(row.id, self.quotas)
        await self.containers.touch(row.id)
        shown = [text for output in ended.outputs for text in (output.stdout, output.stderr)]
        verdict = await self.outputs.verdict(request.moderation, request.project, request.response_id, shown)
        if verdict.blocked:  # withheld: the client never sees it, and the response ends
            ended = Ended([], [], lost=True)
        result = await self._result(request, call, ended, None)
        return result.model_copy(
            update={
                "files": taken.files,
                "text": "" if verdict.blocked else result.text + taken.told(),
                "moderation": verdict.found,
                "blocked": verdict.blocked,
            }
        )

    def _opening(self, request: RunShellInput, call: ShellCallItem) -> list[StreamEvent]:
        return shell_call_events(call, request.output_index) + shell_output_opening(
            request.output_item, request.output_item_index
        )

    def _kill(self, container_id: str, call: ShellCallItem) -> None:
        for index in range(len(call.action.commands)):
            self.host.shell_run(container_id, call.id, index).kill()

    async def _run(self, request: RunShellInput, row: ContainerRow) -> Ended:
        call = request.call
        limits = self.limits(row)
        await self.host.prepare(row.id, limits)
        if not self.host.shell_run(row.id, call.id, 0).started:  # the call's first attempt
            await self.files.bring_in(row.id)
        details = activity.info().heartbeat_details
        following = Following(details[0] if details and isinstance(details[0], dict) else {})
        rhythm = Rhythm(self.containers, row.id)
        outputs: list[ShellCommandOutput] = []
        texts: list[str] = []
        share = ITEM_OUTPUT_CHARS // (2 * max(1, len(call.action.commands)))
        for index, command in enumerate(call.action.commands):
            run = await self.host.start_shell(row.id, call.id, index, command, request.command_seconds, limits)
            await self._follow(request, run, index, following, rhythm)
            outcome = run.outcome() or RunOutcome(lost=True)
            if outcome.lost:
                texts.append(f"$ {command}\n(its end is not known: the container's host lost it; not run again)")
                return Ended(outputs, texts, lost=True)
            stdout = run.output("stdout", self.settings.output_bytes).decode(errors="replace")
            stderr = run.output("stderr", self.settings.output_bytes).decode(errors="replace") + _note(outcome)
            if not run.output_kept:
                stderr += "\n[its output is no longer kept: newer commands' took its place]"
            outputs.append(
                ShellCommandOutput(stdout=shown(stdout, share), stderr=shown(stderr, share), outcome=_outcome(outcome))
            )
            texts.append(_told(command, stdout, stderr, outcome, call.action.max_output_length))
        return Ended(outputs, texts, lost=False)

    async def _follow(self, request: RunShellInput, run: Run, index: int, following: Following, rhythm: Rhythm) -> None:
        """Stream the command's output as it comes (when events are wanted) until it ends."""
        offsets = following.of(index)
        decoders = {stream: codecs.getincrementaldecoder("utf-8")(errors="replace") for stream in ("stdout", "stderr")}
        pending: dict[str, str] = {}
        flushed = time.monotonic()
        # Under an `output: block` plan nothing streams: the output is checked whole first.
        streaming = request.emit_events and not self.outputs.holds(request.moderation)
        async for stream, data in run.follow(offsets if streaming else {"stdout": 1 << 62, "stderr": 1 << 62}):
            if streaming:
                pending[stream] = pending.get(stream, "") + decoders[stream].decode(data)
                if time.monotonic() - flushed >= DELTA_EVERY_SECONDS:
                    await self._send(request, index, pending)
                    flushed = time.monotonic()
            await rhythm.keep(following.sent)
        if pending and streaming:
            await self._send(request, index, pending)
        activity.heartbeat(following.sent)

    async def _send(self, request: RunShellInput, index: int, pending: dict[str, str]) -> None:
        delta = ShellOutputDelta(**{stream: text for stream, text in pending.items() if text})
        pending.clear()
        if delta.stdout is None and delta.stderr is None:
            return
        event = ShellOutputDeltaEvent(
            item_id=request.output_item.id, output_index=request.output_item_index, command_index=index, delta=delta
        )
        await self.emit(request.response_id, [event], once=False)

    async def _result(
        self, request: RunShellInput, call: ShellCallItem, ended: Ended, why_not: str | None
    ) -> RunShellResult:
        output = request.output_item.model_copy(
            update={
                "output": ended.outputs,
                "status": "incomplete" if ended.lost else "completed",
                "max_output_length": call.action.max_output_length,
            }
        )
        if request.emit_events:
            await self.emit(request.response_id, shell_output_closing(output, request.output_item_index))
        text = "\n\n".join(ended.texts) if why_not is None else f"Error: {why_not}; the commands were not run."
        return RunShellResult(call=call, output_item=output, text=text)


def _outcome(outcome: RunOutcome) -> ShellExit | ShellTimeout:
    if outcome.timed_out:
        return ShellTimeout()
    if outcome.exit_code is not None:
        return ShellExit(exit_code=outcome.exit_code)
    return ShellExit(exit_code=SIGNAL_EXIT + (outcome.signal or 0))


def _note(outcome: RunOutcome) -> str:
    """What the command's stderr could not say of its end."""
    notes: list[str] = []
    if outcome.out_of_memory:
        notes.append("killed: the container ran out of memory")
    elif outcome.signal is not None and not outcome.timed_out:
        notes.append(f"killed by signal {outcome.signal}")
    if outcome.launcher_error:
        notes.append(f"the sandbox did not start: {outcome.launcher_error}")
    return "".join(f"\n[{note}]" for note in notes)


def _told(command: str, stdout: str, stderr: str, outcome: RunOutcome, max_chars: int | None) -> str:
    """One command, as the model is told: what it printed (cut to `max_output_length`) and its end."""
    chars = min(max_chars or SHOWN_CHARS_PER_COMMAND, SHOWN_CHARS_PER_COMMAND)
    end = "timed out" if outcome.timed_out else f"exit code {_outcome(outcome).model_dump().get('exit_code')}"
    parts = [f"$ {command}"]
    if stdout:
        parts.append(shown(stdout, chars))
    if stderr:
        parts.append("stderr:\n" + shown(stderr, chars))
    parts.append(f"({end})")
    return "\n".join(parts)
