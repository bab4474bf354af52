"""The Prompts API (OGX's shape) and `prompt` in `POST /v1/responses` (OpenAI's), through the
strict SDK where it has them: versions, the default, rendering with each kind of variable,
the echo, a stale version refused, and one project never seeing another's prompts."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pytest

from access.quotas import QuotaSettings
from models.quotas import ProjectQuotas
from tests.support.keys import make_key
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack, running_stack

IMAGE = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def http(stack: Stack, key: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(base_url=stack.base_url, timeout=30, headers=headers)


async def created(client: httpx.AsyncClient, prompt: str, variables: list[str]) -> dict[str, Any]:
    answer = await client.post("/prompts", json={"prompt": prompt, "variables": variables})
    assert answer.status_code == 200, answer.text
    return answer.json()


async def test_a_prompt_in_versions_with_a_default(stack: Stack):
    async with http(stack) as client:
        first = await created(client, "You are {{ persona }}. Be brief.", ["persona"])
        prompt_id = first["prompt_id"]
        assert prompt_id.startswith("pmpt_") and len(prompt_id) == len("pmpt_") + 48
        assert first == {
            "prompt_id": prompt_id,
            "version": 1,
            "prompt": "You are {{ persona }}. Be brief.",
            "variables": ["persona"],
            "is_default": True,
        }
        second = await client.put(
            f"/prompts/{prompt_id}",
            json={
                "prompt": "You are {{persona}}, in {{language}}.",
                "variables": ["persona", "language"],
                "version": 1,
            },
        )
        assert second.status_code == 200 and second.json()["version"] == 2 and second.json()["is_default"]
        stale = await client.put(f"/prompts/{prompt_id}", json={"prompt": "again", "variables": [], "version": 1})
        assert stale.status_code == 400 and stale.json()["error"]["param"] == "version"
        quiet = await client.put(
            f"/prompts/{prompt_id}",
            json={"prompt": "v3", "variables": [], "version": 2, "set_as_default": False},
        )
        assert quiet.json()["version"] == 3 and not quiet.json()["is_default"]
        assert (await client.get(f"/prompts/{prompt_id}")).json()["version"] == 2
        assert (await client.get(f"/prompts/{prompt_id}", params={"version": 1})).json()["prompt"].startswith("You")
        versions = (await client.get(f"/prompts/{prompt_id}/versions")).json()["data"]
        assert [(v["version"], v["is_default"]) for v in versions] == [(1, False), (2, True), (3, False)]
        back = await client.put(f"/prompts/{prompt_id}/set-default-version", json={"version": 1})
        assert back.json()["version"] == 1 and back.json()["is_default"]
        listed = (await client.get("/prompts")).json()["data"]
        assert [(p["prompt_id"], p["version"]) for p in listed if p["prompt_id"] == prompt_id] == [(prompt_id, 1)]
        missing = await client.get(f"/prompts/{prompt_id}", params={"version": 9})
        assert missing.status_code == 404 and missing.json()["error"]["param"] == "version"
        assert (await client.delete(f"/prompts/{prompt_id}")).json()["deleted"] is True
        assert (await client.get(f"/prompts/{prompt_id}")).status_code == 404


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": "Hi {{name}}", "variables": []}, "variables"),
        ({"prompt": "Hi", "variables": ["a", "a"]}, "variables"),
        ({"prompt": "Hi", "variables": ["not a name"]}, "variables[0]"),
        ({"prompt": "", "variables": []}, "prompt"),
        ({"prompt": "x" * 100_001}, "prompt"),
        ({"prompt": "Hi", "colour": "red"}, "colour"),
    ],
)
async def test_a_bad_prompt_is_refused_naming_the_parameter(stack: Stack, body: dict, param: str):
    async with http(stack) as client:
        before = len((await client.get("/prompts")).json()["data"])
        refused = await client.post("/prompts", json=body)
        assert refused.status_code == 400 and refused.json()["error"]["param"] == param, refused.text
        assert len((await client.get("/prompts")).json()["data"]) == before


async def test_a_response_from_a_prompt_renders_each_kind_of_variable(
    stack: Stack, sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="bom dia"), Reply(text="olá")])
    async with http(stack) as client:
        prompt = await created(
            client, "Answer as {{persona}} in {{language}}. {{photo}}", ["persona", "language", "photo"]
        )
    variables = {
        "persona": "a tour guide",
        "language": {"type": "input_text", "text": "Portuguese"},
        "photo": {"type": "input_image", "image_url": IMAGE, "detail": "low"},
    }
    answer = await sdk.responses.create(
        model=model,
        input="greet me",
        instructions="Keep it short.",
        prompt={"id": prompt["prompt_id"], "variables": variables},
    )
    assert answer.output_text == "bom dia"
    assert answer.prompt.id == prompt["prompt_id"] and answer.prompt.version == "1"
    assert answer.instructions == "Answer as a tour guide in Portuguese. \n\nKeep it short."
    messages = backend.requests(model)[0]["messages"]
    assert messages[0] == {"role": "system", "content": "Answer as a tour guide in Portuguese. \n\nKeep it short."}
    user = [message for message in messages if message["role"] == "user"]
    assert user[0]["content"][0]["type"] == "image_url" and user[-1]["content"] == "greet me"
    follow_up = await sdk.responses.create(model=model, input="and again", previous_response_id=answer.id)
    assert follow_up.prompt is None and follow_up.instructions is None  # a prompt is not carried over
    assert "tour guide" not in json.dumps(backend.requests(model)[1]["messages"][0])


@pytest.mark.parametrize(
    ("prompt", "param", "status"),
    [
        ({"id": "pmpt_" + "0" * 48}, "prompt.id", 404),
        ({"version": "7"}, "prompt.version", 404),
        ({"variables": {}}, "prompt.variables.city", 400),
        ({"variables": {"city": "Lisbon", "country": "PT"}}, "prompt.variables.country", 400),
        ({"version": "one"}, "prompt.version", 400),
    ],
)
async def test_a_bad_prompt_reference_is_refused_and_leaves_nothing(
    stack: Stack, sdk: openai.AsyncOpenAI, model: str, prompt: dict, param: str, status: int
):
    async with http(stack) as client:
        made = await created(client, "Weather in {{city}}", ["city"])
        reference = {"id": made["prompt_id"], "variables": {"city": "Lisbon"}} | prompt
        listed = len((await client.get("/responses")).json()["data"])
        refused = await client.post("/responses", json={"model": model, "input": "hi", "prompt": reference})
        assert refused.status_code == status and refused.json()["error"]["param"] == param, refused.text
        assert len((await client.get("/responses")).json()["data"]) == listed


async def test_a_prompt_is_its_projects_alone(temporal_address: str, backend: ScriptedBackend, sqlite_store):
    async with running_stack(temporal_address, backend, sqlite_store) as own:
        alpha, _ = make_key(own, "alpha")
        beta, _ = make_key(own, "beta")
        async with http(own, alpha) as mine, http(own, beta) as theirs:
            made = await created(mine, "secret text", [])
            assert (await theirs.get(f"/prompts/{made['prompt_id']}")).status_code == 404
            assert (await theirs.get("/prompts")).json()["data"] == []
            stolen = await theirs.post(
                "/responses", json={"model": "m", "input": "hi", "prompt": {"id": made["prompt_id"]}}
            )
            assert stolen.status_code == 404 and stolen.json()["error"]["param"] == "prompt.id"
            assert (await theirs.delete(f"/prompts/{made['prompt_id']}")).status_code == 404
            assert (await mine.get(f"/prompts/{made['prompt_id']}")).status_code == 200


async def test_a_projects_prompts_and_versions_are_bounded(
    temporal_address: str, backend: ScriptedBackend, sqlite_store
):
    limits = QuotaSettings(project=ProjectQuotas(max_prompts=2, max_versions_per_prompt=2))
    async with running_stack(temporal_address, backend, sqlite_store, quotas=limits) as own:
        async with http(own) as client:
            first = await created(client, "one", [])
            await created(client, "two", [])
            third = await client.post("/prompts", json={"prompt": "three"})
            assert third.status_code == 400 and third.json()["error"]["code"] == "limit_exceeded"
            assert "PROJECT_MAX_PROMPTS" in third.json()["error"]["message"]
            url = f"/prompts/{first['prompt_id']}"
            assert (await client.put(url, json={"prompt": "v2", "version": 1})).status_code == 200
            refused = await client.put(url, json={"prompt": "v3", "version": 2})
            assert refused.status_code == 400 and "PROMPT_MAX_VERSIONS" in refused.json()["error"]["message"]


async def test_a_prompt_that_would_render_past_the_budget_is_refused_before_it_is_built(stack: Stack, model: str):
    """Issue 60 (H4): 20,000 `{{a}}` with an 8 KB value would be 160 MB of instructions. The size
    is known from the placeholders and the value's length: the request is refused naming the
    variable, and the server never holds more than a few MiB more for it."""
    import tracemalloc

    async with http(stack) as client:
        prompt_id = (await created(client, "{{a}}" * 20_000, ["a"]))["prompt_id"]
        tracemalloc.start()
        try:
            answer = await client.post(
                "/responses",
                json={"model": model, "input": "hi", "prompt": {"id": prompt_id, "variables": {"a": "x" * 8192}}},
            )
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == "prompt.variables.a" and error["code"] == "string_above_max_length", error
    assert peak < 16 * 1024 * 1024, f"{peak} bytes held for a refused prompt"
