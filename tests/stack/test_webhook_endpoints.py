"""A project's own webhook endpoints (`/v1/webhook_endpoints`), managed with the official
SDK's `client.webhooks` under strict validation: each takes the events it names, signed with
its own secret (shown once, sealed in the store with its URL), for its project's background
responses only; a rotation can keep the old secret a while; a deleted endpoint gets nothing
more; an approver key manages none; and any body is an endpoint or a 400 naming the parameter,
leaving nothing behind."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import store_probe
from tests.support.histories import keep_recording, replayer
from tests.support.keys import as_key, http_as, make_key
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import TEST_EXECUTION, Stack, empty_store, running_stack
from tests.support.waiting import eventually, until_terminal
from tests.support.webhook_receiver import FAST, Receiver, attempts


@pytest.fixture(scope="module")
async def hooked(
    temporal_address: str,
    backend: ScriptedBackend,
    store_kind: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> AsyncIterator[tuple[Stack, dict[str, str]]]:
    """A stack of its own (keys close a server for everyone; deliveries retry quickly) with
    keys of two projects and an approver of the first."""
    store = empty_store(store_kind, tmp_path_factory.mktemp("hooked"), request)
    execution = TEST_EXECUTION.model_copy(update={"webhooks": FAST})
    async with running_stack(temporal_address, backend, store, execution=execution) as stack:
        keys = {
            "alpha": make_key(stack, "alpha")[0],
            "beta": make_key(stack, "beta")[0],
            "approver": make_key(stack, "alpha", approver=True)[0],
        }
        yield stack, keys


async def _stored_text(stack: Stack) -> str:
    return repr(await store_probe.rows(stack.settings.database_url, "SELECT * FROM webhook_endpoints"))


async def test_the_openai_sdk_manages_an_endpoint_and_its_secret_is_shown_once(
    hooked: tuple[Stack, dict[str, str]], receiver: Receiver
):
    stack, keys = hooked
    async with as_key(stack, keys["alpha"]) as sdk:
        created = await sdk.webhooks.create(name="pager", url=receiver.url, event_types=["response.completed"])
        secret = created.signing_secret
        assert created.id.startswith("we_") and secret.startswith("whsec_") and created.url == receiver.url
        assert created.signing_secret_hint == f"whsec_...{secret[-4:]}"
        assert created.event_types == ["response.completed"]
        try:
            fetched = await sdk.webhooks.retrieve(created.id)
            assert fetched.name == "pager" and not hasattr(fetched, "signing_secret")
            assert [endpoint.id async for endpoint in sdk.webhooks.list()] == [created.id]
            # Neither the secret nor the URL (which can hold a token) is in the store in clear.
            stored = await _stored_text(stack)
            assert secret not in stored and secret.removeprefix("whsec_") not in stored
            assert receiver.url not in stored and f":{receiver.port}" not in stored

            unchanged = await sdk.webhooks.update(created.id, name="pager")
            assert unchanged.updated_at == created.updated_at
            renamed = await sdk.webhooks.update(
                created.id, name="on call", event_types=["response.completed", "response.action_required"]
            )
            assert renamed.name == "on call" and renamed.event_types == [
                "response.completed",
                "response.action_required",
            ]

            tested = await sdk.webhooks.test(created.id, event_type="response.completed")
            assert tested.status_code == 200 and tested.webhook_endpoint_id == created.id
            [sample] = receiver.deliveries
            event = openai.OpenAI(api_key="unused").webhooks.unwrap(sample.body, sample.headers, secret=secret)
            assert event.type == "response.completed"

            rotated = await sdk.webhooks.rotate_secret(created.id, keep_old_secret_active_for_24_hours=True)
            assert rotated.signing_secret != secret
            assert rotated.signing_secret_hint.endswith(rotated.signing_secret[-4:])
            await sdk.webhooks.test(created.id, event_type="response.action_required")
            both = receiver.deliveries[-1]
            for either in (secret, rotated.signing_secret):  # the old secret still verifies, for a day
                openai.OpenAI(api_key="unused").webhooks.verify_signature(both.body, both.headers, secret=either)
            assert both.event["data"]["required_action"]["type"] == "mcp_approval_request"
            cut_over = await sdk.webhooks.rotate_secret(created.id)
            await sdk.webhooks.test(created.id, event_type="response.completed")
            with pytest.raises(openai.InvalidWebhookSignatureError):  # not kept: the old one stops at once
                openai.OpenAI(api_key="unused").webhooks.verify_signature(
                    receiver.deliveries[-1].body, receiver.deliveries[-1].headers, secret=rotated.signing_secret
                )
            openai.OpenAI(api_key="unused").webhooks.verify_signature(
                receiver.deliveries[-1].body, receiver.deliveries[-1].headers, secret=cut_over.signing_secret
            )
        finally:
            deleted = await sdk.webhooks.delete(created.id)
        assert deleted.deleted and deleted.id == created.id
        with pytest.raises(openai.NotFoundError):
            await sdk.webhooks.retrieve(created.id)


async def test_a_projects_responses_reach_its_endpoints_with_the_events_they_name(
    hooked: tuple[Stack, dict[str, str]], backend: ScriptedBackend, model: str, receiver: Receiver
):
    stack, keys = hooked
    # A model each: the three run at once, and a shared script would answer them in any order.
    backend.script(f"{model}-ok", [Reply(text="done")])
    backend.script(f"{model}-bad", [Reply(status=400, error_message="no")])
    backend.script(f"{model}-beta", [Reply(text="beta's")])
    backend.script(f"{model}-plain", [Reply(text="plain")])
    async with as_key(stack, keys["alpha"]) as alpha, as_key(stack, keys["beta"]) as beta:
        endpoint = await alpha.webhooks.create(name="done", url=receiver.url, event_types=["response.completed"])
        try:
            completed = await alpha.responses.create(model=f"{model}-ok", input="one", background=True)
            failed = await alpha.responses.create(model=f"{model}-bad", input="two", background=True)
            others = await beta.responses.create(model=f"{model}-beta", input="three", background=True)
            ordinary = await alpha.responses.create(model=f"{model}-plain", input="four")  # not background: no events
            ended = [
                (await until_terminal(sdk, response.id)).status
                for response, sdk in ((completed, alpha), (failed, alpha), (others, beta))
            ]
            assert ended == ["completed", "failed", "completed"]
            [delivery] = await eventually(lambda: receiver.of(completed.id), "the completed event")
            event = openai.OpenAI(api_key="unused").webhooks.unwrap(
                delivery.body, delivery.headers, secret=endpoint.signing_secret
            )
            assert event.type == "response.completed" and event.data.id == completed.id
            # Its workflow, which sent to the project's endpoint, replays as it ran.
            history = await stack.client.get_workflow_handle(completed.id).fetch_history()
            assert (await replayer().replay_workflow(history)).replay_failure is None
            await keep_recording("webhooks_to_a_project", stack.client, completed.id)
            await asyncio.sleep(1.0)  # time for anything that should not come
            assert {delivery.event["data"]["id"] for delivery in receiver.deliveries} == {completed.id}
            assert ordinary.status == "completed"
        finally:
            await alpha.webhooks.delete(endpoint.id)
        with pytest.raises(openai.NotFoundError):  # another project's endpoint is not found, as unknown
            await beta.webhooks.retrieve(endpoint.id)


async def test_an_endpoint_deleted_before_the_event_gets_nothing_and_is_not_retried(
    hooked: tuple[Stack, dict[str, str]], backend: ScriptedBackend, model: str, receiver: Receiver
):
    stack, keys = hooked
    backend.script(model, [Reply(text="slow", delay=1.5)])
    gone_before = attempts("response.completed", "gone")
    async with as_key(stack, keys["alpha"]) as alpha:
        endpoint = await alpha.webhooks.create(name="gone", url=receiver.url, event_types=["response.completed"])
        response = await alpha.responses.create(model=model, input="one", background=True)
        await alpha.webhooks.delete(endpoint.id)
        await until_terminal(alpha, response.id)

    await eventually(
        lambda: attempts("response.completed", "gone") > gone_before, "the attempt to the deleted endpoint", seconds=20
    )
    await asyncio.sleep(2.5)  # rounds later: never tried again
    assert attempts("response.completed", "gone") == gone_before + 1
    assert not await store_probe.rows(
        stack.settings.database_url, "SELECT * FROM webhook_outbox WHERE endpoint = :endpoint", endpoint=endpoint.id
    )
    assert receiver.of(response.id) == []


async def test_an_approver_key_manages_no_endpoints(hooked: tuple[Stack, dict[str, str]]):
    stack, keys = hooked
    async with http_as(stack, keys["approver"]) as approver:
        listed = await approver.get("/v1/webhook_endpoints")
        made = await approver.post(
            "/v1/webhook_endpoints",
            json={"name": "x", "url": "http://127.0.0.1:9/hooks", "event_types": ["response.completed"]},
        )
    assert listed.status_code == made.status_code == 403


_EVENT_TYPES = [
    "response.completed",
    "response.failed",
    "response.cancelled",
    "response.incomplete",
    "response.action_required",
]
_URLS = [
    "http://127.0.0.1:9/hooks",
    "https://127.0.0.1/x?token=abc",
    "http://10.255.255.1/hooks",
    "ftp://127.0.0.1/x",
    "http://",
    "not a url",
    "http://127.0.0.1:9/\x00",
    "",
]
_BODIES = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.text(max_size=300), st.integers(), st.none()),
        "url": st.one_of(st.sampled_from(_URLS), st.text(max_size=40), st.integers()),
        "event_types": st.one_of(
            st.lists(st.one_of(st.sampled_from(_EVENT_TYPES), st.text(max_size=20)), max_size=7),
            st.text(max_size=10),
            st.none(),
        ),
        "extra": st.integers(),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_BODIES)
async def test_any_body_is_an_endpoint_or_a_400_naming_the_parameter_that_leaves_nothing(
    hooked: tuple[Stack, dict[str, str]], body: dict[str, Any]
):
    stack, keys = hooked
    before = await store_probe.value(stack.settings.database_url, "SELECT COUNT(*) FROM webhook_endpoints")
    async with http_as(stack, keys["beta"]) as beta:
        answer = await beta.post("/v1/webhook_endpoints", json=body)
        if answer.status_code == 200:
            assert await beta.delete(f"/v1/webhook_endpoints/{answer.json()['id']}")
            assert body["url"] in _URLS[:2] and 1 <= len(body["name"]) <= 256
            return
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] in ("name", "url", "event_types", "extra") or answer.json()["error"][
        "param"
    ].startswith("event_types["), answer.text
    assert await store_probe.value(stack.settings.database_url, "SELECT COUNT(*) FROM webhook_endpoints") == before


async def test_the_list_pages_and_bad_paging_is_a_400(hooked: tuple[Stack, dict[str, str]]):
    stack, keys = hooked
    async with as_key(stack, keys["beta"]) as beta:
        made = [
            await beta.webhooks.create(
                name=f"n{index}", url="http://127.0.0.1:9/hooks", event_types=["response.failed"]
            )
            for index in range(3)
        ]
        try:
            first = await beta.webhooks.list(limit=2)
            assert [endpoint.id for endpoint in first.data] == [made[2].id, made[1].id] and first.has_more
            rest = await beta.webhooks.list(limit=2, after=first.data[-1].id)
            assert [endpoint.id for endpoint in rest.data] == [made[0].id] and not rest.has_more
        finally:
            for endpoint in made:
                await beta.webhooks.delete(endpoint.id)
    async with http_as(stack, keys["beta"]) as http:
        for query, param in (({"limit": "0"}, "limit"), ({"limit": "x"}, "limit"), ({"after": "we_unknown"}, "after")):
            answer = await http.get("/v1/webhook_endpoints", params=query)
            assert answer.status_code == 400 and answer.json()["error"]["param"] == param
        unknown = await http.post("/v1/webhook_endpoints/we_unknown/test", json={"event_type": "response.completed"})
        assert unknown.status_code == 404


_CHANGES = st.fixed_dictionaries(
    {},
    optional={
        "name": st.one_of(st.text(max_size=300), st.integers(), st.none()),
        "url": st.one_of(st.sampled_from(_URLS), st.text(max_size=40), st.none()),
        "event_types": st.one_of(
            st.lists(st.one_of(st.sampled_from(_EVENT_TYPES), st.text(max_size=20)), max_size=7), st.none()
        ),
        "event_type": st.one_of(st.sampled_from(_EVENT_TYPES), st.text(max_size=20)),
        "keep_old_secret_active_for_24_hours": st.one_of(st.booleans(), st.text(max_size=3), st.integers()),
        "extra": st.integers(),
    },
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(["", "/rotate_secret", "/test"]), body=_CHANGES)
async def test_any_change_to_an_endpoint_is_made_or_a_400_naming_the_parameter(
    hooked: tuple[Stack, dict[str, str]], route: str, body: dict[str, Any]
):
    stack, keys = hooked
    async with http_as(stack, keys["beta"]) as beta:
        made = (
            await beta.post(
                "/v1/webhook_endpoints",
                json={"name": "changes", "url": "http://127.0.0.1:9/hooks", "event_types": ["response.completed"]},
            )
        ).json()
        try:
            answer = await beta.post(f"/v1/webhook_endpoints/{made['id']}{route}", json=body)
            after = (await beta.get(f"/v1/webhook_endpoints/{made['id']}")).json()
        finally:
            await beta.delete(f"/v1/webhook_endpoints/{made['id']}")
    if answer.status_code == 200:
        if route == "":
            assert after["name"] == body.get("name") or "name" not in body or body["name"] is None
        return
    assert answer.status_code == 400, answer.text
    param = answer.json()["error"]["param"]
    assert param in (
        "name",
        "url",
        "event_types",
        "event_type",
        "keep_old_secret_active_for_24_hours",
        "extra",
        "webhook_endpoint_id",
    ) or param.startswith("event_types["), answer.text
    if route == "":  # a refused update changed nothing
        assert (after["name"], after["url"], after["event_types"]) == (
            "changes",
            "http://127.0.0.1:9/hooks",
            ["response.completed"],
        )


async def test_a_project_has_at_most_twenty_endpoints(hooked: tuple[Stack, dict[str, str]]):
    """They travel in each background workflow's input, which must stay small."""
    stack, keys = hooked
    async with http_as(stack, keys["beta"]) as beta:
        body = {"name": "many", "url": "http://127.0.0.1:9/hooks", "event_types": ["response.completed"]}
        made = [(await beta.post("/v1/webhook_endpoints", json=body)).json()["id"] for _ in range(20)]
        try:
            refused = await beta.post("/v1/webhook_endpoints", json=body)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "limit_exceeded"
        finally:
            for endpoint_id in made:
                await beta.delete(f"/v1/webhook_endpoints/{endpoint_id}")
        assert (await beta.post("/v1/webhook_endpoints", json=body)).status_code == 200  # room again
        await beta.delete(f"/v1/webhook_endpoints/{(await beta.get('/v1/webhook_endpoints')).json()['data'][0]['id']}")


async def test_twenty_endpoints_at_most_even_when_created_all_at_once(hooked: tuple[Stack, dict[str, str]]):
    """Creates that race (each counts, then inserts) on PostgreSQL's pool cannot all see
    room for one more."""
    stack, keys = hooked
    async with http_as(stack, keys["beta"]) as beta:
        body = {"name": "racing", "url": "http://127.0.0.1:9/hooks", "event_types": ["response.completed"]}
        answers = await asyncio.gather(*(beta.post("/v1/webhook_endpoints", json=body) for _ in range(40)))
        made = [answer.json()["id"] for answer in answers if answer.status_code == 200]
        try:
            assert len(made) == 20, [answer.status_code for answer in answers]
            assert {answer.json()["error"]["code"] for answer in answers if answer.status_code != 200} == {
                "limit_exceeded"
            }
        finally:
            for endpoint_id in made:
                await beta.delete(f"/v1/webhook_endpoints/{endpoint_id}")
