"""OpenAI's Containers API through the official SDK with strict validation: a container made,
listed, found, its files uploaded, copied from `/v1/files`, listed, downloaded and deleted,
the container deleted; bad input a 4xx naming its parameter, leaving nothing behind; another
project's container unknown."""

from __future__ import annotations

from collections.abc import AsyncIterator

import openai
import pytest

from tests.support.keys import as_key, make_key
from tests.support.scripted_backend import ScriptedBackend
from tests.support.stack import Stack, empty_store, running_stack


async def test_a_container_and_its_files_through_the_sdk(sdk: openai.AsyncOpenAI):
    made = await sdk.containers.create(name="analysis", expires_after={"anchor": "last_active_at", "minutes": 30})
    opened = await sdk.containers.create(
        name="online",
        network_policy={"type": "allowlist", "allowed_domains": ["data.example.invalid", "api.example.invalid"]},
    )
    assert opened.network_policy.type == "allowlist"
    assert opened.network_policy.allowed_domains == ["data.example.invalid", "api.example.invalid"]
    await sdk.containers.delete(opened.id)
    assert made.id.startswith("cntr_") and made.status == "running" and made.memory_limit == "1g"
    assert made.expires_after.minutes == 30 and made.network_policy.type == "disabled"
    assert (await sdk.containers.retrieve(made.id)).name == "analysis"
    assert made.id in [each.id async for each in sdk.containers.list(limit=100)]

    uploaded = await sdk.containers.files.create(made.id, file=("data.csv", b"a,b\n1,2\n3,4\n"))
    assert uploaded.path == "/mnt/data/data.csv" and uploaded.bytes == 12 and uploaded.source == "user"
    source = await sdk.files.create(file=("notes.txt", b"some notes"), purpose="user_data")
    copied = await sdk.containers.files.create(made.id, file_id=source.id)
    assert copied.path == "/mnt/data/notes.txt" and copied.bytes == 10
    listed = [each.id async for each in sdk.containers.files.list(made.id)]
    assert set(listed) == {uploaded.id, copied.id}
    content = await sdk.containers.files.content.retrieve(uploaded.id, container_id=made.id)
    assert content.content == b"a,b\n1,2\n3,4\n"
    await sdk.containers.files.delete(copied.id, container_id=made.id)
    with pytest.raises(openai.NotFoundError):
        await sdk.containers.files.retrieve(copied.id, container_id=made.id)

    await sdk.containers.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        await sdk.containers.retrieve(made.id)
    assert made.id not in [each.id async for each in sdk.containers.list(limit=100)]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"name": "x", "memory_limit": "2g"}, "memory_limit"),
        ({"name": "x", "memory_limit": "64g"}, "memory_limit"),  # past SANDBOX_MAX_MEMORY (4g)
        ({"name": "x", "network_policy": {"type": "allowlist", "allowed_domains": []}}, "network_policy"),
        ({"name": "x", "network_policy": {"type": "allowlist", "allowed_domains": ["10.0.0.1"]}}, "network_policy"),
        ({"name": "x", "network_policy": {"type": "allowlist", "allowed_domains": ["not a domain"]}}, "network_policy"),
        # A public suffix would allow every name anyone registers under it (issue 59, L1).
        ({"name": "x", "network_policy": {"type": "allowlist", "allowed_domains": ["com.au"]}}, "network_policy"),
        (
            {"name": "x", "network_policy": {"type": "allowlist", "allowed_domains": ["ok.example", "github.io"]}},
            "network_policy",
        ),
        ({"name": "x", "file_ids": ["file_missing"]}, "file_ids[0]"),
        ({"name": "x", "expires_after": {"anchor": "last_active_at", "minutes": 0}}, "expires_after.minutes"),
        ({"name": ""}, "name"),
        ({"name": "x", "skills": [{"type": "skill_reference", "skill_id": "s"}]}, "skills"),
    ],
)
async def test_bad_input_is_a_4xx_naming_its_parameter_and_leaves_nothing(stack: Stack, body: dict, param: str):
    async with stack.http() as http:
        before = (await http.get("/v1/containers", params={"limit": 100})).json()["data"]
        answer = await http.post("/v1/containers", json=body)
        assert answer.status_code in (400, 404), answer.text
        assert (answer.json()["error"]["param"] or "").startswith(param), answer.text
        assert (await http.get("/v1/containers", params={"limit": 100})).json()["data"] == before


@pytest.fixture
async def keyed(
    temporal_address: str,
    backend: ScriptedBackend,
    store_kind: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[Stack]:
    """A stack of its own: keys close a server for everyone."""
    store = empty_store(store_kind, tmp_path_factory.mktemp("keyed"), request)
    async with running_stack(temporal_address, backend, store) as stack:
        yield stack


async def test_another_projects_container_is_unknown(keyed: Stack):
    stack = keyed
    alpha, _ = make_key(stack, "containers-alpha")
    beta, _ = make_key(stack, "containers-beta")
    async with as_key(stack, alpha) as mine, as_key(stack, beta) as theirs:
        made = await mine.containers.create(name="private")
        for attempt in (
            theirs.containers.retrieve(made.id),
            theirs.containers.delete(made.id),
            theirs.containers.files.list(made.id),
            theirs.containers.files.create(made.id, file=("x.txt", b"x")),
        ):
            with pytest.raises(openai.NotFoundError):
                await attempt
        for tool in (
            {"type": "code_interpreter", "container": made.id},
            {"type": "shell", "environment": {"type": "container_reference", "container_id": made.id}},
        ):
            with pytest.raises(openai.NotFoundError) as refused:
                await theirs.responses.create(model="m", input="hi", tools=[tool])
            assert refused.value.body["param"].startswith("tools[0]")
        await mine.containers.delete(made.id)
