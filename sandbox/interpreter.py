"""The worker's side of a container's Python interpreter (`sandbox/interpreter_main.py`, which
runs inside the sandbox): start it when there is none, hand it a call, follow what the call
prints, interrupt it, and know when the interpreter (and with it the Python state) was lost.

Each interpreter is a run of its own (`sandbox/runs.py`) in `interpreter-<n>/`, so it too
outlives the worker that started it; a new one is started only when the last has ended (its
state lost: the next call says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from sandbox import reach
from sandbox.identity import Identity
from sandbox.runs import POLL_SECONDS, Run, RunOutcome

READY_SECONDS = 30.0
STATUS_BYTES = 64 * 1024
KEPT_OUTPUTS = 16


@dataclass(frozen=True)
class CallStatus:
    error: str | None
    interrupted: bool
    figures: list[str]


class Interpreters:
    """The interpreters of one container: `control` is its `/mnt/control`, `home` where their
    runs are kept, `owner` whom the interpreter runs as (what the worker makes under `control`
    is given to it; None: the worker's own uid)."""

    def __init__(self, home: Path, control: Path, owner: Identity | None = None) -> None:
        self.home = home
        self.control = control
        self.owner = owner

    def generations(self) -> list[int]:
        return sorted(int(path.name.split("-", 1)[1]) for path in self.home.glob("interpreter-*") if path.is_dir())

    def _run(self, generation: int) -> Run:
        name = f"interpreter-{generation}"
        return Run(self.home / name, self.home / "outputs" / name)

    def current(self) -> Run | None:
        """The newest interpreter's run, if one was ever started."""
        generations = self.generations()
        return self._run(generations[-1]) if generations else None

    def alive(self) -> bool:
        current = self.current()
        return current is not None and current.started and current.outcome() is None

    def last_end(self) -> RunOutcome | None:
        current = self.current()
        return None if current is None else current.outcome()

    def next_run(self) -> Run:
        generations = self.generations()
        return self._run((generations[-1] + 1) if generations else 1)

    def reset_control(self) -> None:
        """A new interpreter starts with no request left from the last one (each was answered,
        or is one whose answer was lost with it)."""
        for name in ("requests", "taken", "interrupts"):
            reach.make_directory(self.control, name, self.owner)
            for entry in reach.names(self.control, name):
                reach.remove(self.control, f"{name}/{entry}")
        reach.make_directory(self.control, "runs", self.owner)
        reach.remove(self.control, "ready")

    async def wait_ready(self, run: Run) -> bool:
        """Whether the interpreter said it is up before it ended or `READY_SECONDS` passed."""
        for _ in range(int(READY_SECONDS / POLL_SECONDS)):
            if reach.exists(self.control, "ready"):
                return True
            if run.outcome() is not None:
                return False
            await asyncio.sleep(POLL_SECONDS)
        return False

    # ---- calls ------------------------------------------------------------------------------
    # Everything under `control` is within the sandbox's reach: it is handled by `reach`,
    # which follows no link, and what it says is read as hostile.

    def submit(self, sequence: int, call_id: str, code: str) -> None:
        """Hand the interpreter a call, once: a call handed before (or run) is not handed again."""
        handed = reach.names(self.control, "requests") + reach.names(self.control, "taken")
        if self.taken(call_id) or any(name.endswith(f"-{call_id}.json") for name in handed):
            return
        for kept in ("handed", "pending"):  # out of the sandbox's reach, and off its tmpfs
            (self.home / kept).mkdir(exist_ok=True)
            (self.home / kept / call_id).touch()
        name = f"{sequence:020d}-{call_id}.json"
        reach.write(
            self.control, f"requests/{name}", json.dumps({"call_id": call_id, "code": code}).encode(), self.owner
        )

    def handed(self, call_id: str) -> bool:
        """Whether the call was ever handed to an interpreter of this container (its control
        directory may have been lost since, with the host's restart)."""
        return (self.home / "handed" / call_id).exists()

    def taken(self, call_id: str) -> bool:
        """Whether an interpreter took the call (it ran, runs, or was lost with its interpreter)."""
        return reach.exists(self.control, f"runs/{call_id}")

    def taken_at(self, call_id: str) -> float:
        """When an interpreter took the call (seconds since the epoch; 0 when it did not)."""
        return reach.modified_ns(self.control, f"runs/{call_id}") / 1e9

    def status(self, call_id: str) -> CallStatus | None:
        """How the call ended, as its interpreter said (None: it has not, or said nothing)."""
        raw = reach.read(self.control, f"runs/{call_id}/status.json", limit=STATUS_BYTES)
        if not raw:
            return None
        try:
            said = json.loads(raw)
        except (ValueError, RecursionError):  # what the sandbox wrote: anything at all
            said = None
        if not isinstance(said, dict):
            return CallStatus("(the interpreter's answer was unreadable)", False, [])
        error, figures = said.get("error"), said.get("figures")
        return CallStatus(
            error if isinstance(error, str) else None,
            said.get("interrupted") is True,
            [figure for figure in figures if isinstance(figure, str)] if isinstance(figures, list) else [],
        )

    def interrupt(self, call_id: str) -> None:
        """Stop the call: interrupted if it runs (or as soon as it starts), withdrawn if it
        waits to be taken."""
        reach.write(self.control, f"interrupts/{call_id}", b"", self.owner)
        for name in reach.names(self.control, "requests"):
            if name.endswith(f"-{call_id}.json"):
                reach.remove(self.control, f"requests/{name}")

    async def follow(self, call_id: str, offset: int) -> AsyncIterator[bytes]:
        """What the call printed from `offset` on, as it prints it, until it has ended or the
        interpreter has."""
        while True:
            done = self.status(call_id) is not None or not self.alive()
            data = reach.read(self.control, f"runs/{call_id}/output", offset)
            if data:
                offset += len(data)
                yield data
            if done:
                return
            await asyncio.sleep(POLL_SECONDS)

    def output(self, call_id: str, limit: int) -> bytes:
        return reach.read(self.control, f"runs/{call_id}/output", 0, limit)

    def prune(self, keep: int = KEPT_OUTPUTS) -> None:
        """Drop the outputs of all but the newest `keep` calls (their answers stay, so a call
        is never run twice)."""
        runs = reach.names(self.control, "runs")
        if len(runs) <= keep:
            return
        for call_id in sorted(runs, key=lambda name: reach.modified_ns(self.control, f"runs/{name}"))[:-keep]:
            reach.remove(self.control, f"runs/{call_id}/output")

    def waiting(self) -> bool:
        """Whether a call was handed over and has not answered (the container is busy). Read
        from the worker's own record of the calls it handed (`pending/`, out of the sandbox's
        reach), never from what the sandbox may write: a file code puts in `/mnt/control` must
        not keep its container busy, or its interpreter from being frozen. A call that has
        answered, or whose interpreter has ended, leaves the record."""
        pending = self.home / "pending"
        try:
            names = os.listdir(pending)
        except OSError:
            return False
        alive: bool | None = None
        for call_id in names:
            if self.status(call_id) is None:
                alive = self.alive() if alive is None else alive
                if alive:
                    return True
            with contextlib.suppress(OSError):
                (pending / call_id).unlink()
        return False
