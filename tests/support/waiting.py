"""Waiting in tests: for a condition, for the backend to be asked, for a response to end or to
ask for approval. Each fails the test naming what it waited for, rather than hanging."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from typing import Any

import openai
import pytest

from tests.support.scripted_backend import ScriptedBackend


async def eventually(check: Callable[[], Any], what: str, *, seconds: float = 30, poll_seconds: float = 0.05) -> Any:
    """Until `check()` (plain or async) gives something truthy, which is returned; a test that
    waits longer than `seconds` fails naming what it waited for, rather than hanging."""
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"waited {seconds:g} s for {what}")
        await asyncio.sleep(poll_seconds)


async def until_requested(backend: ScriptedBackend, model: str, count: int = 1, *, seconds: float = 30) -> None:
    """Until the backend has received `count` requests for this model."""
    await eventually(
        lambda: len(backend.requests(model)) >= count,
        f"{count} upstream request(s) for model {model} (got {len(backend.requests(model))})",
        seconds=seconds,
    )


async def until_terminal(client: openai.AsyncOpenAI, response_id: str, poll_seconds: float = 0.05, seconds: float = 60):
    """Poll the response until it reaches a terminal status; returns it. A poll whose kept-alive
    connection the server closed as it was reused (HTTP/1.1's idle-timeout race, which the SDK
    would retry on its own; the tests' clients retry nothing) is simply polled again."""

    async def ended():  # noqa: ANN202
        try:
            response = await client.responses.retrieve(response_id)
        except openai.APIConnectionError:
            return None
        return response if response.status not in ("queued", "in_progress") else None

    return await eventually(ended, f"response {response_id} to end", seconds=seconds, poll_seconds=poll_seconds)


async def until_awaiting_approval(client: openai.AsyncOpenAI, response_id: str, seconds: float = 30):
    """Until the background response shows, last in its output, an approval request it waits for."""

    async def asking():  # noqa: ANN202
        response = await client.responses.retrieve(response_id)
        assert response.status in ("queued", "in_progress"), response
        return response if response.output and response.output[-1].type == "mcp_approval_request" else None

    return await eventually(asking, f"response {response_id} to ask for approval", seconds=seconds)
