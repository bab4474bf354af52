"""Made-up model names cost nothing that lasts: a hundred of them sent to a `*` deployment with
`rpm` make one budget row, not a hundred (each read by every process every second), and sixty
of them, compacted, make no label values on `/metrics` (which may be open without a key)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import yaml

from tests.support import store_probe
from tests.support.scripted_backend import ScriptedBackend
from tests.support.stack import EmptyStore, running_stack


def star_models_file(tmp_path: Path, backend: ScriptedBackend) -> str:
    path = tmp_path / "models.yaml"
    entry = {"model_name": "*", "litellm_params": {"model": "openai/*", "api_base": backend.base_url, "rpm": 6000}}
    path.write_text(yaml.safe_dump({"model_list": [entry]}), encoding="utf-8")
    return str(path)


async def test_made_up_model_names_make_no_budget_rows_and_no_label_values(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, tmp_path: Path
):
    names = [f"made-up-{uuid.uuid4().hex[:12]}" for _ in range(100)]
    models_file = star_models_file(tmp_path, backend)
    async with running_stack(temporal_address, backend, store, models_file=models_file) as stack:
        async with stack.sdk(timeout=60) as sdk:
            gate = asyncio.Semaphore(20)

            async def one(name: str) -> str:
                async with gate:
                    response = await sdk.responses.create(
                        model=name,
                        input="hello there, how are you today",
                        context_management=[{"type": "compaction", "compact_threshold": 1}],
                    )
                    return response.status

            statuses = await asyncio.gather(*(one(name) for name in names))
        async with stack.http() as http:
            shown = (await http.get("/metrics")).text
    assert statuses.count("completed") + statuses.count("failed") == len(names), statuses
    keys = [row[0] for row in await store_probe.rows(store.url, "SELECT deployment FROM upstream_budgets")]
    assert len(keys) <= 2 and not [key for key in keys if "made-up" in key], keys
    assert not [name for name in names if name in shown]
    assert 'model="other"' in shown
