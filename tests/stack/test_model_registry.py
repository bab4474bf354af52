"""The model registry (LiteLLM proxy's config format): parsing, `/v1/models`, routing by
model name, failover to fallbacks, and unknown models refused before anything is kept."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote

import openai
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.histories import decoded_history, keep_recording, replayer
from tests.support.processes import CLI
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, running_stack


def _write(tmp_path: Path, document: Any) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def test_the_cli_stops_at_start_on_a_malformed_file(tmp_path: Path):
    path = _write(tmp_path, {"model_list": [{"model_name": "a", "litellm_params": {"model": "vllm/a"}}]})
    started = subprocess.run(
        [
            CLI,
            "worker",
            "--models-file",
            str(path),
            "--temporal-address",
            "127.0.0.1:1",
            "--database-url",
            f"sqlite:///{tmp_path / 'r.db'}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 1
    lines = [line for line in started.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "model_list[0] (a)" in lines[0], started.stderr


# ---- through the stack ---------------------------------------------------------------------------


@pytest.fixture
async def two_backends():
    first, second = ScriptedBackend().start(), ScriptedBackend().start()
    yield first, second
    first.stop()
    second.stop()


@pytest.fixture
async def registry_stack(
    temporal_address: str, store: EmptyStore, two_backends, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    first, second = two_backends
    monkeypatch.setenv("FIRST_BACKEND_KEY", "sk-first-backend-secret")
    path = _write(
        tmp_path,
        {
            "model_list": [
                {
                    "model_name": "alpha",
                    "litellm_params": {
                        "model": "openai/alpha-upstream",
                        "api_base": first.base_url,
                        "api_key": "os.environ/FIRST_BACKEND_KEY",
                    },
                },
                {
                    "model_name": "beta",
                    "litellm_params": {"model": "hosted_vllm/beta-upstream", "api_base": second.base_url},
                },
                {
                    "model_name": "broken",
                    "litellm_params": {"model": "openai/broken-upstream", "api_base": first.base_url},
                },
            ],
            "router_settings": {"fallbacks": [{"broken": ["beta"]}]},
        },
    )
    async with running_stack(temporal_address, first, store, models_file=str(path)) as stack:
        yield stack


async def test_each_model_reaches_its_own_deployment_and_models_lists_them(registry_stack, two_backends):
    first, second = two_backends
    async with registry_stack.sdk() as sdk:
        listed = await sdk.models.list()
        assert [model.id for model in listed.data] == ["alpha", "beta", "broken"]
        assert {model.owned_by for model in listed.data} == {"openai", "hosted_vllm"}
        assert (await sdk.models.retrieve("beta")).id == "beta"
        with pytest.raises(openai.NotFoundError):
            await sdk.models.retrieve("gamma")
        alpha = await sdk.responses.create(model="alpha", input="to the first")
        beta = await sdk.responses.create(model="beta", input="to the second")
    assert (alpha.model, alpha.output_text) == ("alpha", "echo: to the first")
    assert (beta.model, beta.output_text) == ("beta", "echo: to the second")
    assert len(first.requests("alpha-upstream")) == 1 and not second.requests("alpha-upstream")
    assert len(second.requests("beta-upstream")) == 1 and not first.requests("beta-upstream")
    assert "sk-first-backend-secret" not in alpha.model_dump_json()
    history = await decoded_history(registry_stack.client, alpha.id)  # as the codec endpoint shows it
    events = [event.SerializeToString() for event in history.events]
    assert any(b'"alpha"' in event for event in events)  # payloads are readable here, so the next check can fail
    assert not any(b"sk-first-backend-secret" in event for event in events)


async def test_a_deployment_that_is_down_fails_over_to_its_fallback(registry_stack, two_backends):
    first, second = two_backends
    first.script("broken-upstream", [Reply(status=500, error_message="down") for _ in range(10)])
    async with registry_stack.sdk() as sdk:
        response = await sdk.responses.create(model="broken", input="anyone there?")
    assert response.status == "completed", response.error
    assert response.model == "broken"  # what the client asked for
    assert response.output_text == "echo: anyone there?"
    attempts = registry_stack.settings.execution.inference.maximum_attempts
    assert len(first.requests("broken-upstream")) == attempts
    assert len(second.requests("beta-upstream")) == 1
    history = await registry_stack.client.get_workflow_handle(response.id).fetch_history()
    assert (await replayer().replay_workflow(history)).replay_failure is None
    await keep_recording("upstream_failover", registry_stack.client, response.id)


async def test_an_unknown_model_is_a_404_and_leaves_nothing(registry_stack):
    async with registry_stack.sdk() as sdk, registry_stack.http() as http:
        before = (await http.get("/v1/responses", params={"limit": 100})).json()["data"]
        for stream, background in ((False, False), (True, False), (False, True)):
            with pytest.raises(openai.NotFoundError) as raised:
                await sdk.responses.create(model="gamma", input="hello", stream=stream, background=background)
            error = raised.value.body
            assert (error["code"], error["param"]) == ("model_not_found", "model"), error
        after = (await http.get("/v1/responses", params={"limit": 100})).json()["data"]
    assert after == before


async def test_without_a_file_models_are_the_backends_own(temporal_address: str, store: EmptyStore):
    listing = ScriptedBackend().start()
    try:
        async with running_stack(temporal_address, listing, store) as stack, stack.sdk() as sdk:
            listed = await sdk.models.list()
            assert [model.id for model in listed.data] == ["scripted-a", "scripted-b"]
            # any name is served: the one backend may serve names it does not list
            assert (await sdk.responses.create(model="unlisted", input="hi")).status == "completed"
    finally:
        listing.stop()
    await asyncio.sleep(0)


names = st.one_of(
    st.sampled_from(
        ["alpha", "beta", "broken", "gamma", "ALPHA", "alpha ", "*", "", "a/b", "%2F", ".", "..", "al.pha"]
    ),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=60),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=names)
async def test_any_model_name_is_served_or_refused_naming_model_leaving_nothing(registry_stack, model: str):
    known = model in ("alpha", "beta", "broken")
    async with registry_stack.http() as http:
        before = (await http.get("/v1/responses", params={"limit": 100})).json()["data"]
        answer = await http.post("/v1/responses", json={"model": model, "input": "hi"})
        if known:
            assert answer.status_code == 200 and answer.json()["model"] == model, answer.text
        else:
            assert answer.status_code in (400, 404), answer.text
            assert answer.json()["error"]["param"] == "model", answer.text
            assert (await http.get("/v1/responses", params={"limit": 100})).json()["data"] == before
        # Dots too: a path segment "." or ".." is resolved away by the client (RFC 3986), and
        # `/v1/models/.` would ask for the list.
        looked_up = await http.get(f"/v1/models/{quote(model, safe='').replace('.', '%2E')}")
        assert looked_up.status_code == (200 if known else 404), looked_up.text
        assert looked_up.json()["id" if known else "error"], looked_up.text
