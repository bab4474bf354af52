"""The worker's side of a container's Python interpreter (`sandbox/interpreter_main.py`, which
runs inside the sandbox): start it when there is none, hand it a call, follow what the call
prints, interrupt it, and know when the interpreter (and with it the Python state) was lost.

Each interpreter is a run of its own (`sandbox/runs.py`) in `interpreter-<n>/`, so it too
outlives the worker that started it; a new one is started only when the last has ended (its
state lost: the next call says so).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sandbox.files import read_from, write_atomically
from sandbox.runs import POLL_SECONDS, Run, RunOutcome

READY_SECONDS = 30.0


@dataclass(frozen=True)
class CallStatus:
    error: str | None
    interrupted: bool
    figures: list[str]


class Interpreters:
    """The interpreters of one container: `control` is its `/mnt/control`, `home` where their
    runs are kept."""

    def __init__(self, home: Path, control: Path) -> None:
        self.home = home
        self.control = control

    def generations(self) -> list[int]:
        return sorted(int(path.name.split("-", 1)[1]) for path in self.home.glob("interpreter-*") if path.is_dir())

    def current(self) -> Run | None:
        """The newest interpreter's run, if one was ever started."""
        generations = self.generations()
        return Run(self.home / f"interpreter-{generations[-1]}") if generations else None

    def alive(self) -> bool:
        current = self.current()
        return current is not None and current.started and current.outcome() is None

    def last_end(self) -> RunOutcome | None:
        current = self.current()
        return None if current is None else current.outcome()

    def next_run(self) -> Run:
        generations = self.generations()
        return Run(self.home / f"interpreter-{(generations[-1] + 1) if generations else 1}")

    def reset_control(self) -> None:
        """A new interpreter starts with no request left from the last one (each was answered,
        or is one whose answer was lost with it)."""
        for name in ("requests", "taken", "interrupts"):
            directory = self.control / name
            directory.mkdir(parents=True, exist_ok=True)
            for path in directory.iterdir():
                path.unlink(missing_ok=True)
        (self.control / "runs").mkdir(exist_ok=True)
        (self.control / "ready").unlink(missing_ok=True)

    async def wait_ready(self, run: Run) -> bool:
        """Whether the interpreter said it is up before it ended or `READY_SECONDS` passed."""
        for _ in range(int(READY_SECONDS / POLL_SECONDS)):
            if (self.control / "ready").exists():
                return True
            if run.outcome() is not None:
                return False
            await asyncio.sleep(POLL_SECONDS)
        return False

    # ---- calls ------------------------------------------------------------------------------

    def submit(self, sequence: int, call_id: str, code: str) -> None:
        """Hand the interpreter a call, once: a call handed before (or run) is not handed again."""
        name = f"{sequence:012d}-{call_id}.json"
        if (self.control / "runs" / call_id).exists() or (self.control / "taken" / name).exists():
            return
        request = self.control / "requests" / name
        if not request.exists():
            write_atomically(request, json.dumps({"call_id": call_id, "code": code}))

    def status(self, call_id: str) -> CallStatus | None:
        path = self.control / "runs" / call_id / "status.json"
        if not path.exists():
            return None
        said: dict[str, Any] = json.loads(path.read_text())
        return CallStatus(said.get("error"), bool(said.get("interrupted")), list(said.get("figures") or []))

    def interrupt(self, call_id: str) -> None:
        (self.control / "interrupts").mkdir(exist_ok=True)
        (self.control / "interrupts" / call_id).touch()

    async def follow(self, call_id: str, offset: int) -> AsyncIterator[bytes]:
        """What the call printed from `offset` on, as it prints it, until it has ended or the
        interpreter has."""
        path = self.control / "runs" / call_id / "output"
        while True:
            done = self.status(call_id) is not None or not self.alive()
            data = read_from(path, offset)
            if data:
                offset += len(data)
                yield data
            if done:
                return
            await asyncio.sleep(POLL_SECONDS)

    def output(self, call_id: str, limit: int) -> bytes:
        return read_from(self.control / "runs" / call_id / "output", 0, limit)
