"""Moderation through the strict SDK: `/v1/moderations`, and responses made with `moderation`
(input and output, streamed and not), a flagged word that no client, event log or resumed
stream ever sees, the backend down (closed, then open), a project's policy no request weakens,
and a `safety_identifier` blocked after its responses were."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest

from guardrails.settings import ModerationSettings, RequiredPolicy
from models.moderation import SafetyLimit
from models.webhooks import endpoint_id
from tests.support import store_probe
from tests.support.histories import keep_recording
from tests.support.mcp_servers import McpTestServer
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import TEST_EXECUTION, EmptyStore, Stack, running_stack
from tests.support.waiting import eventually
from tests.support.webhook_receiver import FAST, SECRET, Receiver

MODERATION = {"model": "omni-moderation-latest", "policy": {"input": {"mode": "block"}, "output": {"mode": "block"}}}
SENTENCES = "The weather is fine today. Then we kill the process quickly. Nothing else is said."
PASSED = "The weather is fine today."


async def recorded(stack: Stack, name: str, response_id: str) -> None:
    """Keep the history once the workflow has ended (its end is in the store a moment before)."""
    await stack.client.get_workflow_handle(response_id).result()
    await keep_recording(name, stack.client, response_id)


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_the_moderations_endpoint_answers_in_openais_shape(sdk: openai.AsyncOpenAI, stack: Stack):
    one = await sdk.moderations.create(input="I will stab the cake", model="omni-moderation-latest")
    assert one.model == "omni-moderation-latest" and len(one.results) == 1
    assert one.results[0].flagged and one.results[0].categories.violence
    assert one.results[0].category_applied_input_types.violence == ["text"]
    many = await sdk.moderations.create(input=["a quiet day", "you idiot"])
    assert [result.flagged for result in many.results] == [False, True]
    assert many.results[1].categories.harassment and many.results[1].category_scores.harassment > 0.5
    image = await sdk.moderations.create(
        input=[
            {"type": "text", "text": "look at this"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    )
    assert len(image.results) == 1 and image.results[0].category_applied_input_types.violence == ["text", "image"]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": "hi", "model": "gpt-4o"}, "model"),
        ({"input": [], "model": "omni-moderation-latest"}, "input"),
        ({"input": "hi", "model": "omni-moderation-latest", "extra": 1}, "extra"),
        ({"input": [{"type": "image_url", "image_url": {"url": "data:," + "A" * (9 * 1024 * 1024)}}]}, "input"),
    ],
)
@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_bad_moderation_request_is_a_400_naming_the_parameter(stack: Stack, body: dict, param: str):
    async with stack.http() as http:
        answer = await http.post("/v1/moderations", json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"].startswith(param)


@pytest.mark.parametrize(
    ("moderation", "param"),
    [
        ({"model": "gpt-4o"}, "moderation.model"),
        ({"model": "omni-moderation-latest", "policy": {"input": {"mode": "loud"}}}, "moderation.policy.input.mode"),
        ({"policy": {}}, "moderation.model"),
    ],
)
@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_bad_moderation_policy_is_refused_and_leaves_nothing(
    stack: Stack, model: str, moderation: dict, param: str
):
    before = await store_probe.value(stack.settings.database_url, "SELECT COUNT(*) FROM responses")
    async with stack.http() as http:
        answer = await http.post("/v1/responses", json={"model": model, "input": "hi", "moderation": moderation})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["param"] == param
    assert await store_probe.value(stack.settings.database_url, "SELECT COUNT(*) FROM responses") == before


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_moderated_response_has_both_results_streamed_or_not(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="A calm answer."), Reply(text="Another calm answer. Still calm.")])
    whole = await sdk.responses.create(model=model, input="a calm question", moderation=MODERATION)
    assert whole.status == "completed" and whole.output_text == "A calm answer."
    assert whole.moderation is not None
    assert whole.moderation.input.type == "moderation_result" and not whole.moderation.input.flagged
    assert whole.moderation.output.type == "moderation_result" and not whole.moderation.output.flagged
    async with sdk.responses.stream(model=model, input="a calm question", moderation=MODERATION) as stream:
        deltas = [event.delta async for event in stream if event.type == "response.output_text.delta"]
        final = await stream.get_final_response()
    assert "".join(deltas) == "Another calm answer. Still calm." and final.status == "completed"
    assert final.moderation is not None and final.moderation.output.type == "moderation_result"
    kept = await sdk.responses.retrieve(final.id)
    assert kept.moderation == final.moderation
    await recorded(stack, "moderated", final.id)


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_flagged_input_ends_the_response_before_the_model_is_asked(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="never said")])
    blocked = await sdk.responses.create(model=model, input="how do I build a bomb", moderation=MODERATION)
    assert blocked.status == "incomplete" and blocked.incomplete_details.reason == "content_filter"
    assert blocked.output == [] and backend.requests(model) == []
    assert blocked.moderation.input.type == "moderation_result" and blocked.moderation.input.flagged
    assert blocked.moderation.input.categories["illicit/violent"]
    assert blocked.moderation.output.type == "error" and blocked.moderation.output.code == "output_not_produced"
    await recorded(stack, "moderated_input_blocked", blocked.id)
    scored = await sdk.responses.create(
        model=model,
        input="how do I build a bomb",
        moderation={"model": "omni-moderation-latest", "policy": {"input": {"mode": "score"}}},
    )
    assert scored.status == "completed" and scored.moderation.input.flagged
    assert scored.moderation.output.type == "error" and scored.moderation.output.code == "moderation_not_requested"


@pytest.mark.one_store  # the checks are what is tested, not the store
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_the_input_check_begun_beside_the_start_is_made_once(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, stream: bool
):
    """The first turn's check and call begin while the workflow starts (`activities/early_calls.py`):
    the workflow's own check takes that verdict, so the moderation backend is asked once, and
    the model once, after it."""
    backend.script(model, [Reply(text="A calm answer.")])
    input_only = {"model": "omni-moderation-latest", "policy": {"input": {"mode": "block"}}}
    asked_before = len(backend.moderated)
    if stream:
        async with sdk.responses.stream(model=model, input="a calm question", moderation=input_only) as events:
            final = await events.get_final_response()
    else:
        final = await sdk.responses.create(model=model, input="a calm question", moderation=input_only)
    assert final.status == "completed" and final.output_text == "A calm answer."
    assert final.moderation.input.type == "moderation_result" and not final.moderation.input.flagged
    checks = [body for body in backend.moderated[asked_before:] if "a calm question" in json.dumps(body)]
    assert len(checks) == 1, checks
    assert len(backend.requests(model)) == 1


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_tool_output_that_comes_back_is_input_checked_too(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(tool_calls=[("lookup", {"q": "x"})]), Reply(text="never said")])
    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}]
    asked = await sdk.responses.create(model=model, input="look it up", tools=tools, moderation=MODERATION)
    call = next(item for item in asked.output if item.type == "function_call")
    answered = await sdk.responses.create(
        model=model,
        previous_response_id=asked.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "step one: murder them"}],
        tools=tools,
        moderation=MODERATION,
    )
    assert answered.status == "incomplete" and answered.incomplete_details.reason == "content_filter"
    assert len(backend.requests(model)) == 1


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_server_run_tools_result_is_checked_before_the_model_sees_it(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    backend.script(model, [Reply(tool_calls=[("weather", {"city": "Murder Bay"})]), Reply(text="never said")])
    tool = {"type": "mcp", "server_label": "tools", "server_url": mcp_server.url, "require_approval": "never"}
    checked = await sdk.responses.create(
        model=model,
        input="the weather, please",
        tools=[tool],
        moderation={"model": "omni-moderation-latest", "policy": {"input": {"mode": "block"}}},
    )
    assert checked.status == "incomplete" and checked.incomplete_details.reason == "content_filter"
    call = next(item for item in checked.output if item.type == "mcp_call")
    assert call.output == "sunny in Murder Bay"  # it ran; the model was not shown what it gave
    assert len(backend.requests(model)) == 1
    assert checked.moderation.input.flagged and checked.moderation.input.categories["violence"]


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_flagged_word_mid_stream_never_reaches_anyone(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text=SENTENCES, chunk_chars=3, chunk_delay=0.005)])
    seen = [
        event
        async for event in await sdk.responses.create(model=model, input="tell me", moderation=MODERATION, stream=True)
    ]
    assert seen[-1].type == "response.incomplete"
    final = seen[-1].response
    assert not any("kill" in json.dumps(event.model_dump(mode="json")) for event in seen)
    assert final.status == "incomplete" and final.incomplete_details.reason == "content_filter"
    assert final.output_text == PASSED
    assert final.moderation.output.flagged and final.moderation.output.categories["violence"]
    resumed = [event async for event in await sdk.responses.retrieve(final.id, stream=True, starting_after=0)]
    assert resumed and not any("kill" in json.dumps(event.model_dump(mode="json")) for event in resumed)
    logged = await store_probe.rows(
        stack.settings.database_url, "SELECT data FROM events WHERE response_id = :id", id=final.id
    )
    assert logged and not any("kill" in str(row[0]) for row in logged)
    assert "kill" not in json.dumps((await sdk.responses.retrieve(final.id)).model_dump(mode="json"))
    await recorded(stack, "moderated_stream_blocked", final.id)


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_non_streamed_flagged_reply_keeps_no_text(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text=SENTENCES), Reply(text="and now?")])
    blocked = await sdk.responses.create(model=model, input="tell me", moderation=MODERATION)
    assert blocked.status == "incomplete" and blocked.incomplete_details.reason == "content_filter"
    assert blocked.output_text == "" and "kill" not in blocked.model_dump_json()
    follow = await sdk.responses.create(model=model, input="go on", previous_response_id=blocked.id)
    assert follow.status == "completed"
    sent = backend.requests(model)[-1]["messages"]
    assert "kill" not in json.dumps(sent)  # the chain keeps only what passed


@contextlib.asynccontextmanager
async def moderated_stack(
    temporal_address: str,
    backend: ScriptedBackend,
    store: EmptyStore,
    tmp_path: Path,
    settings: ModerationSettings,
    **options: object,
) -> AsyncIterator[Stack]:
    """A stack whose models file has moderation deployments on the scripted backend: `guard`
    (Llama Guard at its chat completions), `down-moderation` (503s), `omni-moderation-latest`."""
    models = tmp_path / "models.yaml"
    models.write_text(
        "model_list:\n"
        "  - model_name: '*'\n"
        f"    litellm_params: {{model: 'openai/*', api_base: '{backend.base_url}'}}\n"
        "  - model_name: guard\n"
        f"    litellm_params: {{model: 'openai/guard-upstream', api_base: '{backend.base_url}'}}\n"
        "    model_info: {mode: moderation, moderation_format: llama_guard}\n"
        "  - model_name: down-moderation\n"
        f"    litellm_params: {{model: 'openai/down-moderation', api_base: '{backend.base_url}'}}\n"
        "    model_info: {mode: moderation}\n"
    )
    async with running_stack(
        temporal_address, backend, store, models_file=str(models), moderation=settings, **options
    ) as stack:
        yield stack


async def test_llama_guards_answers_through_a_chat_backend(
    temporal_address: str, backend: ScriptedBackend, sqlite_store: EmptyStore, tmp_path: Path
):
    backend.script("guard-upstream", [Reply(text="safe"), Reply(text="unsafe\nS1,S10"), Reply(text="Sure! Fine.")])
    async with moderated_stack(temporal_address, backend, sqlite_store, tmp_path, ModerationSettings()) as stack:
        sdk = stack.sdk()
        safe = await sdk.moderations.create(input="hello", model="guard")
        assert not safe.results[0].flagged
        unsafe = await sdk.moderations.create(input="something", model="guard")
        assert unsafe.results[0].flagged and unsafe.results[0].categories.violence and unsafe.results[0].categories.hate
        with pytest.raises(openai.InternalServerError) as malformed:
            await sdk.moderations.create(input="else", model="guard")
        assert malformed.value.status_code == 502 and "not a verdict" in malformed.value.message
        asked = backend.requests("guard-upstream")[0]["messages"][0]["content"]
        assert "User: hello" in asked and "S14: Code Interpreter Abuse." in asked
        await sdk.close()


async def test_the_moderation_backend_down_fails_closed_then_open(
    temporal_address: str, backend: ScriptedBackend, sqlite_store: EmptyStore, tmp_path: Path, model: str
):
    backend.script(model, [Reply(text="answered unchecked")])
    policy = {"model": "down-moderation", "policy": {"input": {"mode": "block"}, "output": {"mode": "block"}}}
    closed = ModerationSettings(budget_seconds=1.5)
    async with moderated_stack(temporal_address, backend, sqlite_store, tmp_path, closed) as stack:
        sdk = stack.sdk()
        failed = await sdk.responses.create(model=model, input="hello", moderation=policy)
        assert failed.status == "incomplete" and failed.incomplete_details.reason == "content_filter"
        assert failed.moderation.input.type == "error" and failed.moderation.input.code == "moderation_unavailable"
        assert "down-moderation" in failed.moderation.input.message
        assert backend.requests(model) == []
        tries = [body for body in backend.moderated if body["model"] == "down-moderation"]
        assert len(tries) >= 2  # retried within its budget before it gave up
        await sdk.close()
    opened = ModerationSettings(budget_seconds=1.0, fail_open=True)
    async with moderated_stack(temporal_address, backend, sqlite_store, tmp_path, opened) as stack:
        sdk = stack.sdk()
        went_on = await sdk.responses.create(model=model, input="hello", moderation=policy)
        assert went_on.status == "completed" and went_on.output_text == "answered unchecked"
        assert went_on.moderation.input.type == "error" and went_on.moderation.output.type == "error"
        await sdk.close()


async def test_a_projects_policy_is_not_weakened_and_blocked_users_are_refused(
    temporal_address: str, backend: ScriptedBackend, store: EmptyStore, receiver: Receiver, model: str
):
    backend.script(model, [Reply(text="fine") for _ in range(4)])
    settings = ModerationSettings(
        required={"*": RequiredPolicy(model="omni-moderation-latest", input="block")},
        safety=SafetyLimit(blocks=2, window_seconds=3600),
    )
    policy = FAST.model_copy(update={"endpoints": [endpoint_id(receiver.url)]})
    async with running_stack(
        temporal_address,
        backend,
        store,
        moderation=settings,
        webhook_urls=[receiver.url],
        webhook_secret=SECRET,
        execution=TEST_EXECUTION.model_copy(update={"webhooks": policy}),
    ) as stack:
        sdk = stack.sdk()
        weaker = {"model": "omni-moderation-latest", "policy": {"input": {"mode": "score"}}}
        first = await sdk.responses.create(model=model, input="kill it", moderation=weaker, safety_identifier="u-1")
        assert first.status == "incomplete" and first.incomplete_details.reason == "content_filter"
        second = await sdk.responses.create(model=model, input="stab it", safety_identifier="u-1")
        assert second.status == "incomplete" and second.moderation.input.flagged  # no `moderation`: still checked
        with pytest.raises(openai.PermissionDeniedError) as refused:
            await sdk.responses.create(model=model, input="a calm question", safety_identifier="u-1")
        assert refused.value.body["code"] == "safety_identifier_blocked"
        assert refused.value.body["param"] == "safety_identifier"
        other = await sdk.responses.create(model=model, input="a calm question", safety_identifier="u-2")
        assert other.status == "completed"
        delivered = await eventually(
            lambda: [each for each in receiver.of(second.id) if each.event["type"] == "safety_identifier.blocked"],
            "the safety_identifier.blocked webhook",
        )
        assert delivered[0].event["data"] == {"id": second.id, "safety_identifier": "u-1"}
        sdk.webhooks.verify_signature(delivered[0].body, delivered[0].headers, secret=SECRET)  # signed as OpenAI signs
        assert len([each for each in receiver.deliveries if each.event["type"] == "safety_identifier.blocked"]) == 1
        await sdk.close()


# ---- issue 60 (M4): what a hosted tool gives back is held like the reply's text ----------------


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_an_mcp_tools_flagged_result_is_never_sent(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str, mcp_server: McpTestServer
):
    """Under `output: block`, a server-run tool's result streamed and stayed in the response before
    any check (the next turn's input check came after the client had it). Its arguments are clean;
    what it gives back is not: it is withheld, and the response ends before the model is asked."""
    backend.script(model, [Reply(tool_calls=[("line", {"number": 1})]), Reply(text="never said")])
    tool = {"type": "mcp", "server_label": "play", "server_url": mcp_server.url, "require_approval": "never"}
    seen = [
        event
        async for event in await sdk.responses.create(
            model=model, input="the second line", tools=[tool], moderation=MODERATION, stream=True
        )
    ]
    final = seen[-1].response
    assert final.status == "incomplete" and final.incomplete_details.reason == "content_filter"
    call = next(item for item in final.output if item.type == "mcp_call")
    assert call.output is None and call.status == "incomplete"
    assert not any("murder" in json.dumps(event.model_dump(mode="json")) for event in seen)
    assert "murder" not in json.dumps((await sdk.responses.retrieve(final.id)).model_dump(mode="json"))
    assert final.moderation.output.flagged and len(backend.requests(model)) == 1
    backend.script(f"{model}-clean", [Reply(tool_calls=[("line", {"number": 0})]), Reply(text="a stage, then")])
    clean = await sdk.responses.create(
        model=f"{model}-clean", input="the first line", tools=[tool], moderation=MODERATION
    )
    assert clean.status == "completed" and clean.output_text == "a stage, then"
    assert next(item for item in clean.output if item.type == "mcp_call").output == "All the world's a stage."


# ---- the review of issue 60's change: what it still let through -------------------------------


def leaked(events: list, word: str) -> list[str]:
    return [event.type for event in events if word in json.dumps(event.model_dump(mode="json"))]


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_retried_streams_new_text_is_checked_from_its_start(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """The stream is cut mid-reply and the call made again: the new attempt says something
    else. What the first attempt sent passed then; the new text was taken as passed up to the
    same length, and reached the end events and the stored response unchecked."""
    first = "Nice weather today. Lovely day indeed. Good times for all. " * 3
    second = "You idiot. You moron. I will kill you. " + "And so on and on. " * 10
    backend.script(model, [Reply(text=first, chunk_chars=5, chunk_delay=0.02, cut_after_chunks=30), Reply(text=second)])
    seen = [
        event async for event in await sdk.responses.create(model=model, input="hi", moderation=MODERATION, stream=True)
    ]
    final = seen[-1].response
    assert final.status == "incomplete" and final.incomplete_details.reason == "content_filter", final.status
    assert not leaked(seen, "idiot") and not leaked(seen, "kill")
    assert "idiot" not in json.dumps((await sdk.responses.retrieve(final.id)).model_dump(mode="json"))


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_a_blocked_reply_keeps_no_log_probabilities_of_what_it_withheld(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """Not streamed: a blocked reply kept its tokens' log probabilities, so its text could be read
    back token by token. Streamed or not, no alternative the model did not say goes out either
    (no check reads `top_logprobs`)."""
    backend.script(model, [Reply(text="The weather is fine. Then we kill the process. Bye.")])
    whole = await sdk.responses.create(
        model=model, input="hi", moderation=MODERATION, top_logprobs=2, include=["message.output_text.logprobs"]
    )
    assert whole.status == "incomplete" and "kill" not in whole.model_dump_json()
    assert (
        "kill"
        not in (await sdk.responses.retrieve(whole.id, include=["message.output_text.logprobs"])).model_dump_json()
    )
    backend.script(f"{model}-calm", [Reply(text="A calm and gentle answer. Nothing more.", chunk_chars=4)])
    seen = [
        event
        async for event in await sdk.responses.create(
            model=f"{model}-calm",
            input="hi",
            moderation=MODERATION,
            top_logprobs=2,
            include=["message.output_text.logprobs"],
            stream=True,
        )
    ]
    sent = [entry for event in seen if event.type == "response.output_text.delta" for entry in event.logprobs or []]
    assert sent and all(not entry.top_logprobs for entry in sent)


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_arguments_are_checked_as_the_client_is_shown_them(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """A call's JSON holds `\\u2014kill\\u2014`, no word to a classifier; the custom tool's input a
    client is shown decodes it to "—kill—". The check reads what the client reads."""
    backend.script(model, [Reply(tool_calls=[("note", {"input": "I will \u2014kill\u2014 you"})])])
    seen = [
        event
        async for event in await sdk.responses.create(
            model=model,
            input="hi",
            moderation=MODERATION,
            stream=True,
            tools=[{"type": "custom", "name": "note", "description": "free text"}],
        )
    ]
    assert seen[-1].response.status == "incomplete" and not leaked(seen, "kill")


@pytest.mark.one_store  # the checks are what is tested, not the store
async def test_an_mcp_servers_listing_is_checked_before_it_is_sent(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """A tool's description is what the server gives back too: under `output: block`, a listing
    that says what the reply may not is withheld, and the response ends before the model is asked."""
    server = McpTestServer(tool_count=1, description="Now I will murder the king.")
    server.start()
    try:
        backend.script(model, [Reply(text="never said")])
        tool = {"type": "mcp", "server_label": "play", "server_url": server.url, "require_approval": "never"}
        seen = [
            event
            async for event in await sdk.responses.create(
                model=model, input="list them", tools=[tool], moderation=MODERATION, stream=True
            )
        ]
    finally:
        server.stop()
    final = seen[-1].response
    assert final.status == "incomplete" and final.incomplete_details.reason == "content_filter", final.status
    assert not leaked(seen, "murder") and len(backend.requests(model)) == 0
