"""Cancel, in the basic form issue 2 needs (issue 4 owns its guarantees)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import openai
import pytest

from tests.conftest import running_stack
from tests.scripted_backend import Reply, ScriptedBackend


async def test_cancel_a_running_background_response(temporal_address: str, backend: ScriptedBackend,
                                                     tmp_path: Path, model: str):
    backend.script(model, [Reply(text="too late", delay=30)])
    async with running_stack(temporal_address, backend, tmp_path, task_timeout_seconds=2) as stack:
        async with stack.sdk(timeout=30) as client:
            created = await client.responses.create(model=model, input="slow", background=True)
            assert created.status == "queued"
            while not backend.requests(model):
                await asyncio.sleep(0.05)
            started = time.monotonic()
            cancelled = await client.responses.cancel(created.id)
            assert cancelled.status == "cancelled"
            assert time.monotonic() - started < 5, "the cancel waited for the upstream call to finish"
            assert (await client.responses.retrieve(created.id)).status == "cancelled"
            with pytest.raises(openai.ConflictError):
                await client.responses.cancel(created.id)
