"""Code in a container, as activities: place a container on a host, run a `code_interpreter`
call in its interpreter, and give up on a container whose host is gone.

`run_code` runs on the container's host (its own task queue) and is safe to retry: a call is
handed to the interpreter once (`sandbox/interpreter.py`), and an attempt after a worker's
death finds it running, or run, and waits for its answer (nothing of it is kept in the
worker). A call the interpreter took and never answered (the interpreter was killed,
out of memory say, while it ran) is not run again: the model is told it stopped and that the
Python state is lost; the next call starts a new interpreter. A call past its time is
interrupted; one that does not stop then ends with its interpreter. A response cancelled while
its code runs interrupts the code; a worker that stops leaves it running, for the next.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from temporalio import activity

from activities.cancel_watch import unless_cancelled
from activities.container_work import ContainerWork, Rhythm, shown
from models import activity_names
from models.activity_io import (
    ContainerFileCreated,
    ContainerLostInput,
    ContainerLostResult,
    PlaceContainerInput,
    PlaceContainerResult,
    RunCodeInput,
    RunCodeResult,
)
from models.code_items import CodeInterpreterCallItem, CodeInterpreterImage, CodeInterpreterLogs
from models.errors import CancelRequestedError, SandboxFailedError
from models.events import code_closing, code_opening, hosted_closing
from sandbox.containers import ContainerHost, InterpreterEnded
from sandbox.interpreter import CallStatus, Interpreters
from sandbox.runs import POLL_SECONDS
from store.containers import ContainerRow

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg")
"""A file code writes with one of these is one of the call's `image` outputs too."""
INTERRUPT_GRACE_SECONDS = 5.0
FIRST_POLL_SECONDS = 0.002


@dataclass(frozen=True)
class Ended:
    """How a call ended, as the model is told."""

    status: CallStatus | None
    lost: bool
    """The interpreter ended while it ran (it did not answer)."""
    timed_out: bool
    restarted: bool
    """A new interpreter took it: the Python state of the calls before is gone."""


async def _stop(host: ContainerHost, container_id: str, call_id: str) -> None:
    """Interrupt the call; an interpreter that does not stop it within the grace ends (and its
    Python state with it)."""
    interpreters = host.interpreters(container_id)
    host.thaw_interpreter(container_id)  # its interrupts are watched from inside
    interpreters.interrupt(call_id)
    for _ in range(int(INTERRUPT_GRACE_SECONDS / POLL_SECONDS)):
        if interpreters.status(call_id) is not None or not interpreters.alive():
            return
        if not interpreters.taken(call_id) and not interpreters.waiting():
            return  # withdrawn before it was taken
        await asyncio.sleep(POLL_SECONDS)
    current = interpreters.current()
    if current is not None:
        current.kill()


class CodeExecutionActivities(ContainerWork):
    @activity.defn(name=activity_names.PLACE_CONTAINER)
    async def place_container(self, request: PlaceContainerInput) -> PlaceContainerResult:
        host = await self.containers.place(request.container_id, self.host_id)
        if host == self.host_id:
            row = await self.containers.get(request.container_id)
            if row is not None:
                await self.host.prepare(row.id, self.limits(row))
        return PlaceContainerResult(host=host)

    @activity.defn(name=activity_names.CONTAINER_LOST)
    async def container_lost(self, request: ContainerLostInput) -> ContainerLostResult:
        """Its host did not take its command in time: the container is gone with its host."""
        row = await self.containers.get(request.container_id)
        if row is None or row.host != request.host:
            return ContainerLostResult(expired=False)
        return ContainerLostResult(expired=await self.containers.end(row.id, "expired"))

    @activity.defn(name=activity_names.RUN_CODE)
    async def run_code(self, request: RunCodeInput) -> RunCodeResult:
        call = request.call
        row = await self.container(call.container_id)
        if row is None:
            return await self._ended(
                request, call, "failed", "Error: the container is gone (it expired or was deleted)."
            )
        if request.emit_events:
            await self.emit(request.response_id, code_opening(call, request.output_index))
        try:
            ended = await unless_cancelled(self.cancels.notifier, request.response_id, self._run(request, row))
        except CancelRequestedError:
            await _stop(self.host, row.id, call.id)
            raise
        except asyncio.CancelledError:
            if not activity.is_worker_shutdown():  # the response was cancelled; a worker that stops leaves it running
                await asyncio.shield(_stop(self.host, row.id, call.id))
            raise
        finally:
            # What the call left running (threads, processes) does not run on after it.
            await asyncio.to_thread(self.host.freeze_interpreter, row.id)
        output = self.host.interpreters(row.id).output(call.id, self.settings.output_bytes).decode(errors="replace")
        taken = await self.files.take_out(row.id, self.quotas)
        await self.containers.touch(row.id)
        verdict = await self.outputs.verdict(request.moderation, request.project, request.response_id, [output])
        if verdict.blocked:  # its logs withheld: the client never sees them, and the response ends
            withheld = call.model_copy(
                update={"status": "incomplete", "outputs": [] if request.include_outputs else None}
            )
            if request.emit_events:
                await self.emit(request.response_id, code_closing(withheld, request.output_index))
            return RunCodeResult(call=withheld, text="", files=taken.files, moderation=verdict.found, blocked=True)
        told = await self._told(request, call, ended, output, taken.files)
        return told.model_copy(update={"text": told.text + taken.told(), "moderation": verdict.found})

    async def _run(self, request: RunCodeInput, row: ContainerRow) -> Ended:
        call = request.call
        limits = self.limits(row)
        await self.host.prepare(row.id, limits)
        interpreters = self.host.interpreters(row.id)
        taken = interpreters.taken(call.id)
        if interpreters.handed(call.id) and interpreters.status(call.id) is None and not interpreters.alive():
            return Ended(None, lost=True, timed_out=False, restarted=False)  # handed over, never answered
        restarted = False
        if not interpreters.handed(call.id):
            await self.files.bring_in(row.id)
            try:
                interpreters, restarted = await self.host.start_interpreter(row.id, limits)
            except InterpreterEnded as ended:  # the same start would end the same: not tried again
                log.warning("container %s: %s", row.id, ended)
                why = (
                    f"its container's memory ({row.memory_limit}) is full"
                    if ended.out_of_memory
                    else "the server's log says why"
                )
                raise SandboxFailedError(f"the container's Python interpreter did not start ({why})") from None
            interpreters.prune()
        self.host.thaw_interpreter(row.id)  # frozen since its last call
        interpreters.submit(
            time.time_ns(), call.id, call.code or ""
        )  # again, should the last attempt have died handing it
        # A call taken before this attempt (by one whose worker died) has had some of its time.
        ran = max(0.0, time.time() - interpreters.taken_at(call.id)) if taken else 0.0
        deadline = time.monotonic() + request.timeout_seconds - min(ran, request.timeout_seconds)
        timed_out = await self._wait(row.id, interpreters, call.id, deadline)
        status = interpreters.status(call.id)
        return Ended(status, lost=status is None, timed_out=timed_out, restarted=restarted)

    async def _wait(self, container_id: str, interpreters: Interpreters, call_id: str, deadline: float) -> bool:
        """Until the call has answered or its interpreter has ended, heartbeating (and keeping
        its container from expiring); whether it ran out of time (then it was interrupted, and
        its interpreter ended if it did not stop)."""
        rhythm = Rhythm(self.containers, container_id)
        delay = FIRST_POLL_SECONDS
        while interpreters.status(call_id) is None and interpreters.alive():
            if time.monotonic() >= deadline:
                await _stop(self.host, container_id, call_id)
                return True
            if self.host.interpreter_frozen(container_id):
                self.host.thaw_interpreter(container_id)  # another call's end froze it before this one ran
            await rhythm.keep()
            await asyncio.sleep(delay)  # a quick call is answered at once; a long one is asked seldom
            delay = min(delay * 1.5, POLL_SECONDS)
        return False

    async def _told(
        self,
        request: RunCodeInput,
        call: CodeInterpreterCallItem,
        ended: Ended,
        output: str,
        created: list[ContainerFileCreated],
    ) -> RunCodeResult:
        lines = [shown(output)] if output else []
        if ended.restarted:
            lines.insert(
                0,
                "Note: the container's earlier Python state was lost (its interpreter had stopped); "
                "this code ran in a new one.",
            )
        if ended.timed_out:
            status = "incomplete"
            lines.append(f"Error: the code ran past its {request.timeout_seconds:g} s and was stopped.")
        elif ended.lost:
            status = "failed"
            lines.append(
                "Error: the interpreter stopped while this code ran (out of memory, or killed): its Python state is "
                "lost; the next call starts a new one."
            )
        else:
            status = "completed"
        if created:
            lines.append("Files written: " + ", ".join(f"sandbox:{file.path}" for file in created))
        text = "\n".join(lines) or "(the code ran and printed nothing)"
        outputs: list[CodeInterpreterLogs | CodeInterpreterImage] = [CodeInterpreterLogs(logs=shown(output))]
        figures = set(ended.status.figures) if ended.status is not None else set()
        outputs += [
            CodeInterpreterImage(url=f"/v1/containers/{call.container_id}/files/{file.file_id}/content")
            for file in created
            if file.path in figures or file.path.lower().endswith(IMAGE_SUFFIXES)
        ]
        done = call.model_copy(update={"status": status, "outputs": outputs if request.include_outputs else None})
        if request.emit_events:
            await self.emit(request.response_id, code_closing(done, request.output_index))
        return RunCodeResult(call=done, text=text, files=created)

    async def _ended(
        self, request: RunCodeInput, call: CodeInterpreterCallItem, status: str, text: str
    ) -> RunCodeResult:
        done = call.model_copy(update={"status": status})
        if request.emit_events:
            await self.emit(request.response_id, hosted_closing(done, request.output_index))
        return RunCodeResult(call=done, text=text)
