"""OpenAI's Conversations API and the `conversation` parameter, with the official SDK (strict)
and the Agents SDK: CRUD and items with paging; responses that read a conversation and add
their turn to it, whole, when they end; one response at a time (400 `conversation_locked`,
as OpenAI answers); and a conversation's history kept once, not copied per response."""

from __future__ import annotations

import agents
import openai
import pytest

from tests.support import store_probe
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack
from tests.support.waiting import until_requested, until_terminal


async def test_conversation_crud_and_items(sdk: openai.AsyncOpenAI):
    conversation = await sdk.conversations.create(
        metadata={"topic": "tests"},
        items=[{"type": "message", "role": "user", "content": "first"}, {"role": "assistant", "content": "second"}],
    )
    assert conversation.id.startswith("conv_") and conversation.metadata == {"topic": "tests"}
    assert (await sdk.conversations.retrieve(conversation.id)).created_at == conversation.created_at
    updated = await sdk.conversations.update(conversation.id, metadata={"topic": "renamed"})
    assert updated.metadata == {"topic": "renamed"}

    added = await sdk.conversations.items.create(
        conversation.id,
        items=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "third"}]}],
    )
    assert [item.type for item in added.data] == ["message"]
    everything = await sdk.conversations.items.list(conversation.id, order="asc")
    texts = [item.content[0].text for item in everything.data]
    assert texts == ["first", "second", "third"] and not everything.has_more
    newest = await sdk.conversations.items.list(conversation.id, limit=2)
    assert [item.content[0].text for item in newest.data] == ["third", "second"] and newest.has_more
    rest = await sdk.conversations.items.list(conversation.id, limit=2, after=newest.last_id)
    assert [item.content[0].text for item in rest.data] == ["first"] and not rest.has_more

    one = await sdk.conversations.items.retrieve(added.data[0].id, conversation_id=conversation.id)
    assert one.id == added.data[0].id
    assert (await sdk.conversations.items.delete(one.id, conversation_id=conversation.id)).id == conversation.id
    with pytest.raises(openai.NotFoundError):
        await sdk.conversations.items.retrieve(one.id, conversation_id=conversation.id)

    deleted = await sdk.conversations.delete(conversation.id)
    assert deleted.deleted and deleted.id == conversation.id
    with pytest.raises(openai.NotFoundError):
        await sdk.conversations.retrieve(conversation.id)


async def test_responses_on_a_conversation_read_it_and_add_their_turns(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    conversation = await sdk.conversations.create(items=[{"role": "user", "content": "My name is Ada."}])
    first = await sdk.responses.create(model=model, input="What is my name?", conversation=conversation.id)
    assert first.conversation.id == conversation.id
    second = await sdk.responses.create(model=model, input="Again?", conversation={"id": conversation.id})
    sent = [(message["role"], message["content"]) for message in backend.requests(model)[-1]["messages"]]
    assert sent == [
        ("user", "My name is Ada."),
        ("user", "What is my name?"),
        ("assistant", "echo: What is my name?"),
        ("user", "Again?"),
    ]
    items = (await sdk.conversations.items.list(conversation.id, order="asc")).data
    assert (items[2].id, items[4].id) == (first.output[0].id, second.output[0].id), "items keep their ids"
    assert [(item.role, item.content[0].text) for item in items] == [
        ("user", "My name is Ada."),
        ("user", "What is my name?"),
        ("assistant", "echo: What is my name?"),
        ("user", "Again?"),
        ("assistant", "echo: Again?"),
    ]


async def test_one_response_at_a_time_on_a_conversation(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(text="slow", delay=1.0)])
    conversation = await sdk.conversations.create()
    running = await sdk.responses.create(
        model=model, input="take your time", conversation=conversation.id, background=True
    )
    await until_requested(backend, model)
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model=model, input="me too", conversation=conversation.id)
    assert refused.value.body["code"] == "conversation_locked" and refused.value.body["param"] == "conversation"
    with pytest.raises(openai.BadRequestError):
        await sdk.conversations.items.create(conversation.id, items=[{"role": "user", "content": "meanwhile"}])
    assert (await until_terminal(sdk, running.id)).status == "completed"
    after = await sdk.responses.create(model=model, input="now", conversation=conversation.id)
    assert after.status == "completed"
    texts = [item.content[0].text for item in (await sdk.conversations.items.list(conversation.id, order="asc")).data]
    assert texts == ["take your time", "slow", "now", "echo: now"], "the refused requests left nothing"


async def test_a_failed_or_cancelled_response_adds_nothing_and_frees_the_conversation(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(status=400, error_message="no"), Reply(text="never", delay=60)])
    conversation = await sdk.conversations.create()
    failed = await sdk.responses.create(model=model, input="fail", conversation=conversation.id)
    assert failed.status == "failed"
    doomed = await sdk.responses.create(model=model, input="cancel me", conversation=conversation.id, background=True)
    await until_requested(backend, model, 2)
    assert (await sdk.responses.cancel(doomed.id)).status == "cancelled"
    assert (await sdk.conversations.items.list(conversation.id)).data == []
    assert (await sdk.responses.create(model=model, input="fine", conversation=conversation.id)).status == "completed"


async def test_a_conversations_history_is_not_copied_per_response(stack: Stack, sdk: openai.AsyncOpenAI, model: str):
    conversation = await sdk.conversations.create(items=[{"role": "user", "content": "x" * 5000}])
    ids = [
        (await sdk.responses.create(model=model, input=f"turn {turn}", conversation=conversation.id)).id
        for turn in range(3)
    ]
    url = stack.settings.database_url
    sizes = [
        await store_probe.value(
            url, "SELECT length(CAST(messages AS TEXT)) FROM chat_contexts WHERE response_id = :id", id=response_id
        )
        for response_id in ids
    ]
    kept = await store_probe.value(
        url, "SELECT count(*) FROM conversation_items WHERE conversation_id = :id", id=conversation.id
    )
    assert max(sizes) < 500, f"a response's own context holds the conversation: {sizes}"
    assert kept == 1 + 2 * 3


async def test_item_references_resolve_to_items_of_responses_and_conversations(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    earlier = await sdk.responses.create(model=model, input="remember me")
    conversation = await sdk.conversations.create(items=[{"role": "user", "content": "from a conversation"}])
    conversation_item = (await sdk.conversations.items.list(conversation.id)).data[0]
    input_item = (await sdk.responses.input_items.list(earlier.id)).data[0]
    later = await sdk.responses.create(
        model=model,
        input=[
            {"type": "item_reference", "id": input_item.id},
            {"type": "item_reference", "id": earlier.output[0].id},
            {"type": "item_reference", "id": conversation_item.id},
            {"role": "user", "content": "now"},
        ],
    )
    assert later.status == "completed"
    sent = [(message["role"], message["content"]) for message in backend.requests(model)[-1]["messages"]]
    assert sent == [
        ("user", "remember me"),
        ("assistant", "echo: remember me"),
        ("user", "from a conversation"),
        ("user", "now"),
    ]
    with pytest.raises(openai.NotFoundError) as missing:
        await sdk.responses.create(model=model, input=[{"type": "item_reference", "id": "msg_nowhere"}])
    assert missing.value.body["param"] == "input[0].id"


async def test_the_agents_sdk_runs_on_a_conversation(stack: Stack, backend: ScriptedBackend, model: str):
    client = stack.sdk()
    conversation = await client.conversations.create()
    agent = agents.Agent(
        name="echo", instructions="Be brief.", model=agents.OpenAIResponsesModel(model=model, openai_client=client)
    )
    first = await agents.Runner.run(agent, "one", conversation_id=conversation.id)
    second = await agents.Runner.run(agent, "two", conversation_id=conversation.id)
    assert (first.final_output, second.final_output) == ("echo: one", "echo: two")
    roles = [message["role"] for message in backend.requests(model)[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    items = (await client.conversations.items.list(conversation.id, order="asc")).data
    assert [item.content[0].text for item in items] == ["one", "echo: one", "two", "echo: two"]
