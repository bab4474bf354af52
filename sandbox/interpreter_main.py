"""A container's Python interpreter: one process, inside the sandbox, that runs each
`code_interpreter` call in turn in the same globals, so a variable set in one call is there in
the next (as OpenAI's is), until the process ends.

It is standalone (nothing of the server's code is inside the sandbox) and speaks through files
under `/mnt/control` (`sandbox/interpreter.py` is the worker's side):

- `requests/<seq>-<call id>.json`: a call to run, `{"call_id", "code"}`; taken by renaming
  it into `taken/`, so each runs once;
- `runs/<call id>/output`: what the call printed (its standard output and error, C-level
  writes too), as it prints it;
- `runs/<call id>/status.json`, written once at the end: whether it raised (and the end of
  its traceback), whether it was interrupted, and the figures it left, each saved as a PNG
  under `/mnt/data`;
- `interrupts/<call id>`: ask the running call to stop (a `KeyboardInterrupt` in it);
- `ready`: the interpreter is up.

Like a notebook, a call whose last statement is an expression shows its value.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

CONTROL = Path("/mnt/control")
DATA = Path("/mnt/data")
POLL_SECONDS = 0.05
FIRST_POLL_SECONDS = 0.002
TRACEBACK_CHARS = 4000
OUTPUT_BYTES = int(os.environ.get("OUTPUT_BYTES", 1 << 20))
"""What of a call's output is kept; the rest is read and counted, not kept."""


def _write_atomically(path: Path, text: str) -> None:
    fresh = path.with_name(path.name + ".tmp")
    fresh.write_text(text)
    os.replace(fresh, path)


def _watch_interrupts(current: dict[str, Any]) -> None:
    """A real SIGINT, not `_thread.interrupt_main`: a signal also ends a blocking call (a
    `time.sleep`), where the simulated one waits for it. Sent again every half second while the
    call runs (its code may catch the first); `_interrupter` makes one that comes late harmless."""
    while True:
        call_id = current.get("call_id")
        if call_id and (CONTROL / "interrupts" / call_id).exists():
            current["interrupted"] = call_id
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
        time.sleep(0.1)


def _interrupter(current: dict[str, Any]) -> Any:
    """The SIGINT handler: a `KeyboardInterrupt` only while the code of the call asked to stop
    runs (`current["running"]`, set and cleared inside `_call`'s try). A signal that arrives
    later (the watcher saw the call still running, and the machine was slow to deliver it) is
    ignored: raised in the interpreter's own bookkeeping, it ended the process with no status
    written for the call."""

    def interrupt(_number: int, _frame: Any) -> None:
        if current["running"] and current["interrupted"] == current["call_id"]:
            raise KeyboardInterrupt

    return interrupt


def _call(code: str, namespace: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """One call run: whether it raised, and whether it was interrupted."""
    status: dict[str, Any] = {"error": None, "interrupted": False}
    try:
        current["running"] = True
        try:
            _run(code, namespace)
        finally:
            current["running"] = False
    except KeyboardInterrupt:
        status["interrupted"] = current["interrupted"] == current["call_id"]
        status["error"] = "KeyboardInterrupt"
    except BaseException:  # noqa: BLE001 - the call's error is its output, the interpreter goes on
        status["error"] = _error_text()
    return status


def _keep_output(source: int, path: Path, counted: dict[str, int]) -> None:
    """Copy what the call writes into its output file, up to `OUTPUT_BYTES`; read and count
    the rest (a call that prints a gigabyte costs no disk)."""
    with open(path, "ab") as kept:
        while data := os.read(source, 65536):
            room = OUTPUT_BYTES - counted["bytes"]
            if room > 0:
                kept.write(data[:room])
                kept.flush()
            counted["bytes"] += len(data)
    os.close(source)


def _error_text() -> str:
    """The traceback of the call's error, from its own code on (not the interpreter's frames)."""
    kind, error, trace = sys.exc_info()
    while trace is not None and trace.tb_frame.f_code.co_filename != "<code>":
        trace = trace.tb_next
    return "".join(traceback.format_exception(kind, error, trace))[-TRACEBACK_CHARS:]


def _save_figures(call_id: str, code: str) -> list[str]:
    """The figures left open, each saved under /mnt/data (unless the code saves its figures
    itself), and closed."""
    if "matplotlib.pyplot" not in sys.modules:
        return []
    pyplot: Any = sys.modules["matplotlib.pyplot"]
    saved: list[str] = []
    for number in [] if "savefig" in code else pyplot.get_fignums():
        path = DATA / f"figure-{call_id[-8:]}-{number}.png"
        pyplot.figure(number).savefig(path, format="png", dpi=100, bbox_inches="tight")
        saved.append(str(path))
    pyplot.close("all")
    return saved


def _run(code: str, namespace: dict[str, Any]) -> None:
    tree = ast.parse(code, "<code>", "exec")
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body = tree.body[:-1]
        exec(compile(tree, "<code>", "exec"), namespace)  # noqa: S102 - it is what the tool is for
        value = eval(compile(ast.Expression(last.value), "<code>", "eval"), namespace)  # noqa: S307
        if value is not None:
            print(repr(value))
    else:
        exec(compile(tree, "<code>", "exec"), namespace)  # noqa: S102


def serve() -> None:
    for name in ("requests", "taken", "runs", "interrupts"):
        (CONTROL / name).mkdir(exist_ok=True)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    current: dict[str, Any] = {"call_id": None, "interrupted": None, "running": False}
    signal.signal(signal.SIGINT, _interrupter(current))
    threading.Thread(target=_watch_interrupts, args=(current,), daemon=True).start()
    saved_out, saved_err = os.dup(1), os.dup(2)
    _write_atomically(CONTROL / "ready", str(os.getpid()))
    delay = FIRST_POLL_SECONDS
    while True:
        waiting = sorted(path for path in (CONTROL / "requests").iterdir() if path.suffix == ".json")
        if not waiting:
            time.sleep(delay)  # soon after a call, often (the next comes quickly); idle, seldom
            delay = min(delay * 1.25, POLL_SECONDS)
            continue
        delay = FIRST_POLL_SECONDS
        taken = CONTROL / "taken" / waiting[0].name
        try:
            os.replace(waiting[0], taken)
        except OSError:
            continue
        request = json.loads(taken.read_text())
        call_id = request["call_id"]
        run = CONTROL / "runs" / call_id
        try:
            run.mkdir()
        except FileExistsError:
            continue  # handed over twice: it ran once
        reading, writing = os.pipe()
        counted = {"bytes": 0}
        keeper = threading.Thread(target=_keep_output, args=(reading, run / "output", counted), daemon=True)
        keeper.start()
        current["call_id"], current["interrupted"] = call_id, None
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(writing, 1)
        os.dup2(writing, 2)
        os.close(writing)
        status = _call(request["code"], namespace, current)
        current["call_id"] = None
        try:
            status["figures"] = _save_figures(call_id, request["code"])
        except Exception as error:  # noqa: BLE001
            status["figures"] = []
            status["figure_error"] = f"{type(error).__name__}: {error}"
        if status["error"] and not status["interrupted"]:
            sys.stderr.write(status["error"])
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved_out, 1)
        os.dup2(saved_err, 2)
        keeper.join(2.0)  # a process the call started may hold its output open: not waited for
        status["output_bytes"] = counted["bytes"]
        _write_atomically(run / "status.json", json.dumps(status))


if __name__ == "__main__":
    serve()
