"""API keys in tests: made with the CLI as an operator makes them, and clients that send them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import openai

from tests.support.processes import CLI
from tests.support.stack import Stack


def make_key(stack: Stack, project: str, *, approver: bool = False) -> tuple[str, str]:
    """`durable-responses keys create`, as an operator runs it: (the key, its id)."""
    assert not stack.shared, "a key closes the session's shared stack for every later test: use a stack of its own"
    made = subprocess.run(
        [
            CLI,
            "keys",
            "create",
            "--project",
            project,
            "--database-url",
            stack.settings.database_url,
            *(["--approver"] if approver else []),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("sk-dr-") and len(made.stdout.splitlines()) == 1
    key_id = made.stderr.split(": ", 1)[1].split(" ", 1)[0]
    return key, key_id


def keys_in(data_dir: Path, *projects: str) -> dict[str, str]:
    """A key for each project, made in `dev`'s data dir before it starts: project -> key."""
    made = {}
    for project in projects:
        done = subprocess.run(
            [CLI, "keys", "create", "--project", project, "--data-dir", str(data_dir)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        made[project] = done.stdout.strip()
    return made


def as_key(stack: Stack, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=stack.base_url, api_key=key, _strict_response_validation=True, max_retries=0)


def http_as(stack: Stack, key: str | None) -> httpx.AsyncClient:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(base_url=stack.base_url.removesuffix("/v1"), timeout=30, headers=headers)
