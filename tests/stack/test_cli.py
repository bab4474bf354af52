"""The CLI helps: every option says what it does and its default; a process that cannot
start says why in one line and exits non-zero; `serve` and `worker` say at start which
backend they use and whether a key is set, never the key."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.processes import CLI, _cluster_options, _environment, free_port
from tests.support.stack import Stack
from worker.cli import build_parser


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(action for action in parser._actions if isinstance(action, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_option_of_every_command_has_help():
    parser = build_parser()
    for name, command in _subcommands(parser).items():
        for action in command._actions:
            assert action.help, f"`{name} {'/'.join(action.option_strings) or action.dest}` has no help"
        assert command.description, f"`{name}` has no description"


def test_help_shows_the_commands_and_the_defaults():
    wide = os.environ | {"COLUMNS": "200"}  # no help line wrapped
    top = subprocess.run([CLI, "--help"], capture_output=True, text=True, timeout=30, env=wide).stdout
    for command in ("dev", "serve", "worker", "approve"):
        assert f"\n  {command} " in top, top
    dev = subprocess.run([CLI, "dev", "--help"], capture_output=True, text=True, timeout=30, env=wide).stdout
    for shown in (
        "--ui-port",
        "--demo",
        "(default: 8000)",
        "(default: 7233)",
        "(default: ./.durable-responses)",
        "(default: 127.0.0.1)",
    ):
        assert shown in dev, dev
    assert "(default: None)" not in dev and "(default: False)" not in dev


def _fails_to_start(arguments: list[str], env: dict[str, str], cwd: Path) -> str:
    """Runs a command that must not start; returns the last line it printed."""
    done = subprocess.run(
        [CLI, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=os.environ | {"STARTUP_WAIT_SECONDS": "1"} | env,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output, output
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("arguments", "env", "line"),
    [
        (
            ["serve", "--temporal-address", "127.0.0.1:{closed}", "--port", "{free}"],
            {},
            "durable-responses serve: cannot reach Temporal at 127.0.0.1:{closed} after 1 s: Connection refused (is it "
            "running? `durable-responses dev` starts one; else set TEMPORAL_ADDRESS)",
        ),
        (
            ["worker", "--database-url", "foo://bar"],
            {},
            "durable-responses worker: cannot open the database foo://bar: unsupported database URL 'foo://bar': use "
            "sqlite:///path or postgresql://...",
        ),
        (
            ["worker", "--database-url", "postgresql://me:hunter2@127.0.0.1:{closed}/db"],
            {},
            "durable-responses worker: cannot reach the database postgresql://127.0.0.1:{closed}/db after 1 s: "
            "ConnectionRefusedError: [Errno 111] Connection refused",
        ),
        (
            ["worker"],
            {"INFERENCE_BASE_URL": "localhost:8080"},
            "durable-responses worker: INFERENCE_BASE_URL must be an http(s):// URL of a chat-completions API or 'demo', "
            "not 'localhost:8080'",
        ),
        (
            ["serve"],
            {"SHUTDOWN_GRACE_SECONDS": "soon"},
            "durable-responses serve: SHUTDOWN_GRACE_SECONDS must be a number, not 'soon'",
        ),
        (
            ["worker"],
            {"WEBHOOK_URLS": "https://hooks.example.com/t0ken-hunter2"},
            "durable-responses worker: WEBHOOK_URLS is set but WEBHOOK_SECRET is not: every event is signed",
        ),
        (
            ["serve"],
            {"WEBHOOK_URLS": "https://hooks.example.com/x", "WEBHOOK_SECRET": "whsec_c2hvcnQ="},
            "durable-responses serve: WEBHOOK_SECRET must hold at least 24 random bytes, not 5",
        ),
        (
            ["serve"],
            {"WEBHOOK_URLS": "https://hooks.example.com/x", "WEBHOOK_SECRET": "hunter2"},
            "durable-responses serve: WEBHOOK_SECRET must start with 'whsec_' (make one with `python -c \"import secrets, "
            "base64; print('whsec_' + base64.b64encode(secrets.token_bytes(32)).decode())\"`)",
        ),
        (
            ["worker"],
            {"WEBHOOK_URLS": "hooks.example.com/x", "WEBHOOK_SECRET": "whsec_" + "A" * 44},
            "durable-responses worker: WEBHOOK_URLS must hold http(s):// URLs, not 'hooks.example.com/x'",
        ),
        (
            ["worker"],
            {"WEBHOOK_URLS": "https://[::1/hunter2", "WEBHOOK_SECRET": "whsec_" + "A" * 44},
            "durable-responses worker: WEBHOOK_URLS must hold http(s):// URLs, not '(not a URL)'",
        ),
    ],
)
def test_a_process_that_cannot_start_says_why_in_one_line(
    tmp_path: Path, arguments: list[str], env: dict[str, str], line: str
):
    ports = {"closed": free_port(), "free": free_port()}
    printed = _fails_to_start([argument.format(**ports) for argument in arguments], env, tmp_path)
    assert printed == line.format(**ports)
    assert "hunter2" not in printed


def test_serve_and_worker_say_which_backend_they_use_and_never_the_key(stack: Stack, tmp_path: Path):
    key = "sk-never-printed-0123456789"
    env = _environment(stack, 2) | {"INFERENCE_API_KEY": key}
    port = free_port()
    logs = {role: tmp_path / f"{role}.log" for role in ("serve", "worker")}
    processes = {
        "serve": subprocess.Popen(
            [CLI, "serve", "--port", str(port), *_cluster_options(stack)],
            env=env,
            stdout=logs["serve"].open("wb"),
            stderr=subprocess.STDOUT,
        ),
        "worker": subprocess.Popen(
            [CLI, "worker", *_cluster_options(stack)],
            env=env,
            stdout=logs["worker"].open("wb"),
            stderr=subprocess.STDOUT,
        ),
    }
    try:
        expected = f"inference backend: {stack.settings.inference_base_url} (API key set)"
        listening = f"API listening on http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (
            all(expected in log.read_text() for log in logs.values()) and listening in logs["serve"].read_text()
        ):
            time.sleep(0.1)
        assert listening in logs["serve"].read_text()
        assert "worker polling task queue" in logs["worker"].read_text()
        for process in processes.values():
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=30) == 0
        for role, log in logs.items():
            text = log.read_text()
            assert expected in text, f"{role}: {text}"
            assert key not in text
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()


def test_dev_with_openai_and_no_key_warns_at_start(tmp_path: Path):
    """Aimed at api.openai.com with no key, every request would be refused: `dev` says so (it
    needs no network to say it)."""
    port, temporal_port = free_port(), free_port()
    env = {name: value for name, value in os.environ.items() if name not in ("INFERENCE_API_KEY", "OPENAI_API_KEY")} | {
        "INFERENCE_BASE_URL": "https://api.openai.com/v1"
    }
    log = tmp_path / "dev.log"
    process = subprocess.Popen(
        [CLI, "dev", "--data-dir", str(tmp_path / "data"), "--port", str(port), "--temporal-port", str(temporal_port)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while "durable-responses is ready" not in log.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.2)
        text = log.read_text()
        assert "inference backend: https://api.openai.com/v1 (no API key)" in text
        assert "no API key is set, so api.openai.com will refuse every request" in text
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert "stopping: nothing to wait for; exiting within 20 s" in log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
