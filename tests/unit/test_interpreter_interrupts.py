"""A container's interpreter (`sandbox/interpreter_main.py`) stops a call it is asked to stop,
and a SIGINT that comes after the call ended is ignored: one raised in the interpreter's own
bookkeeping ended the process with no status written for the call (seen on a loaded
machine, where the watcher's second signal came late)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sandbox.interpreter_main import _call, _interrupter


@contextmanager
def _signals_storming(current: dict[str, Any]) -> Iterator[None]:
    """The interpreter's SIGINT handler installed, and SIGINTs sent every 2 ms until the end."""
    before = signal.signal(signal.SIGINT, _interrupter(current))
    stop = threading.Event()

    def storm() -> None:
        while not stop.is_set():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.002)

    sender = threading.Thread(target=storm)
    sender.start()
    try:
        yield
    finally:
        stop.set()
        sender.join()
        signal.signal(signal.SIGINT, before)


def test_a_call_asked_to_stop_stops_and_late_signals_are_ignored():
    current: dict[str, Any] = {"call_id": "ci_1", "interrupted": "ci_1", "running": False}
    with _signals_storming(current):
        status = _call("import time\nfor _ in range(200):\n    time.sleep(0.01)\n", {}, current)
        assert status == {"error": "KeyboardInterrupt", "interrupted": True}
        deadline = time.monotonic() + 0.3
        while time.monotonic() < deadline:  # the interpreter's bookkeeping, signals still coming
            sum(range(1000))


def test_a_call_not_asked_to_stop_is_not_stopped_by_a_stray_signal():
    current: dict[str, Any] = {"call_id": "ci_2", "interrupted": "ci_1", "running": False}
    with _signals_storming(current):
        status = _call("import time\nfor _ in range(20):\n    time.sleep(0.01)\nx = 1", {}, current)
        assert status == {"error": None, "interrupted": False}
