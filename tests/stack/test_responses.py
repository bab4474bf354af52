"""Behaviour of non-streaming responses, through the official SDK in strict mode."""

from __future__ import annotations

import json

import openai
import pytest

from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


async def test_string_input_completes_with_text_and_usage(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(text="Hello from upstream", usage=(12, 4))])
    response = await sdk.responses.create(model=model, input="Hi")
    assert response.status == "completed"
    assert response.output_text == "Hello from upstream"
    assert response.model == model
    assert response.id.startswith("resp_")
    assert response.output[0].type == "message" and response.output[0].id.startswith("msg_")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (12, 4, 16)
    assert response.completed_at is not None and response.error is None
    sent = backend.requests(model)[0]
    assert sent["messages"] == [{"role": "user", "content": "Hi"}]


async def test_message_input_of_every_role_and_image_part(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    image = "data:image/png;base64,iVBORw0KGgo="
    response = await sdk.responses.create(
        model=model,
        input=[
            {"role": "system", "content": "sys"},
            {"role": "developer", "content": "dev"},
            {"role": "assistant", "content": "earlier answer"},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "what is this?"},
                    {"type": "input_image", "image_url": image, "detail": "low"},
                ],
            },
        ],
    )
    assert response.status == "completed"
    messages = backend.requests(model)[0]["messages"]
    assert messages[0] == {"role": "system", "content": "sys"}
    assert messages[1] == {"role": "system", "content": "dev"}
    assert messages[2] == {"role": "assistant", "content": "earlier answer"}
    assert messages[3]["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": image, "detail": "low"}},
    ]


async def test_instructions_are_not_carried_across_a_chain(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    first = await sdk.responses.create(model=model, input="one", instructions="Talk like a pirate")
    assert first.instructions == "Talk like a pirate"
    second = await sdk.responses.create(model=model, input="two", previous_response_id=first.id)
    assert second.instructions is None and second.previous_response_id == first.id
    sent_first, sent_second = backend.requests(model)
    assert sent_first["messages"][0] == {"role": "system", "content": "Talk like a pirate"}
    assert sent_second["messages"] == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "echo: one"},
        {"role": "user", "content": "two"},
    ]


async def test_long_chain_resumes_from_stored_messages_and_history_stays_flat(
    sdk: openai.AsyncOpenAI, stack: Stack, backend: ScriptedBackend, model: str
):
    previous = None
    history_sizes = []
    for turn in range(8):
        response = await sdk.responses.create(
            model=model, input=f"turn {turn} " + "x" * 500, previous_response_id=previous
        )
        assert response.output_text.startswith(f"echo: turn {turn}")
        handle = stack.client.get_workflow_handle(response.id)
        await handle.result()  # the response is handed over before its workflow records its end
        history = await handle.fetch_history()
        history_sizes.append(len(history.to_json()))
        previous = response.id
    last_sent = backend.requests(model)[-1]["messages"]
    assert len(last_sent) == 15  # 7 earlier turns of user + assistant, then this user message
    assert [m["role"] for m in last_sent[:4]] == ["user", "assistant", "user", "assistant"]
    # The conversation never travels through history: the 8th response's history is as
    # large as the 2nd's (give or take ids and timestamps), though its context is 4x longer.
    assert max(history_sizes[1:]) - min(history_sizes[1:]) < 200, history_sizes


async def test_function_tools_round_trip(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    backend.script(
        model,
        [
            Reply(tool_calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]),
            Reply(text="Paris is sunny, Oslo is cold."),
        ],
    )
    first = await sdk.responses.create(model=model, input="Weather in Paris and Oslo?", tools=[WEATHER_TOOL])
    assert first.status == "completed"
    calls = [item for item in first.output if item.type == "function_call"]
    assert [json.loads(call.arguments)["city"] for call in calls] == ["Paris", "Oslo"]
    assert all(call.id.startswith("fc_") and call.call_id for call in calls)
    sent_tools = backend.requests(model)[0]["tools"]
    assert sent_tools[0]["function"]["name"] == "get_weather"
    assert sent_tools[0]["function"]["parameters"] == WEATHER_TOOL["parameters"]

    second = await sdk.responses.create(
        model=model,
        previous_response_id=first.id,
        tools=[WEATHER_TOOL],
        input=[
            {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny"},
            {"type": "function_call_output", "call_id": calls[1].call_id, "output": "cold"},
        ],
    )
    assert second.output_text == "Paris is sunny, Oslo is cold."
    messages = backend.requests(model)[1]["messages"]
    assert messages[1]["role"] == "assistant" and len(messages[1]["tool_calls"]) == 2
    assert messages[2:] == [
        {"role": "tool", "tool_call_id": calls[0].call_id, "content": "sunny"},
        {"role": "tool", "tool_call_id": calls[1].call_id, "content": "cold"},
    ]


async def test_function_call_history_sent_by_the_client(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    """A client that keeps its own history (no previous_response_id) sends calls and outputs."""
    response = await sdk.responses.create(
        model=model,
        tools=[WEATHER_TOOL],
        input=[
            {"role": "user", "content": "Weather in Rome?"},
            {"type": "function_call", "call_id": "call_a", "name": "get_weather", "arguments": '{"city":"Rome"}'},
            {"type": "function_call_output", "call_id": "call_a", "output": "warm"},
        ],
    )
    assert response.status == "completed"
    messages = backend.requests(model)[0]["messages"]
    assert messages[1]["tool_calls"][0]["id"] == "call_a"
    assert messages[2] == {"role": "tool", "tool_call_id": "call_a", "content": "warm"}


async def test_sampling_and_tool_parameters_reach_the_backend(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    response = await sdk.responses.create(
        model=model,
        input="hi",
        tools=[WEATHER_TOOL],
        tool_choice={"type": "function", "name": "get_weather"},
        parallel_tool_calls=False,
        temperature=0.3,
        top_p=0.9,
        max_output_tokens=64,
        metadata={"ticket": "42"},
    )
    sent = backend.requests(model)[0]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["parallel_tool_calls"] is False
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"]) == (0.3, 0.9, 64)
    assert response.temperature == 0.3 and response.top_p == 0.9 and response.max_output_tokens == 64
    assert response.parallel_tool_calls is False and response.metadata == {"ticket": "42"}
    assert response.tool_choice.type == "function"


async def test_length_stop_gives_incomplete(sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str):
    backend.script(model, [Reply(text="cut sho", finish_reason="length")])
    response = await sdk.responses.create(model=model, input="write a lot", max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None and response.incomplete_details.reason == "max_output_tokens"
    assert response.output_text == "cut sho"


@pytest.mark.parametrize(
    ("text_format", "expected"),
    [
        (
            {
                "type": "json_schema",
                "name": "person",
                "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
                "strict": True,
            },
            {
                "type": "json_schema",
                "json_schema": {
                    "name": "person",
                    "schema": {"type": "object", "properties": {"name": {"type": "string"}}},
                    "strict": True,
                },
            },
        ),
        ({"type": "json_object"}, {"type": "json_object"}),
    ],
)
async def test_text_format_becomes_response_format(
    sdk: openai.AsyncOpenAI, backend: ScriptedBackend, model: str, text_format: dict, expected: dict
):
    backend.script(model, [Reply(text='{"name": "Ada"}')])
    response = await sdk.responses.create(model=model, input="json please", text={"format": text_format})
    assert backend.requests(model)[0]["response_format"] == expected
    assert response.text.format.type == text_format["type"]
    assert json.loads(response.output_text) == {"name": "Ada"}


async def test_store_false_is_not_retrievable_nor_chainable(sdk: openai.AsyncOpenAI, model: str):
    response = await sdk.responses.create(model=model, input="secret", store=False)
    assert response.status == "completed" and response.output_text == "echo: secret"
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.retrieve(response.id)
    with pytest.raises(openai.NotFoundError) as refused:
        await sdk.responses.create(model=model, input="more", previous_response_id=response.id)
    assert refused.value.body["param"] == "previous_response_id"


async def test_retrieve_delete_and_list(sdk: openai.AsyncOpenAI, stack: Stack, model: str):
    for earlier in ("one", "two"):  # a second page of two, whatever ran on the stack before
        await sdk.responses.create(model=model, input=f"an earlier {earlier}")
    created = await sdk.responses.create(model=model, input="keep me", metadata={"k": "v"})
    fetched = await sdk.responses.retrieve(created.id)
    assert fetched.model_dump() == created.model_dump()

    async with stack.http() as http:
        listing = (await http.get("/v1/responses", params={"limit": 2})).json()
        assert listing["object"] == "list" and len(listing["data"]) == 2
        assert listing["data"][0]["id"] == created.id and listing["has_more"] is True
        following = (await http.get("/v1/responses", params={"limit": 2, "after": listing["last_id"]})).json()
        assert created.id not in [item["id"] for item in following["data"]]

    await sdk.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        await sdk.responses.delete(created.id)


async def test_input_items_pagination(sdk: openai.AsyncOpenAI, model: str):
    response = await sdk.responses.create(
        model=model, input=[{"role": "user", "content": f"message {index}"} for index in range(5)]
    )
    everything = await sdk.responses.input_items.list(response.id, order="asc")
    texts = [item.content[0].text for item in everything.data]
    assert texts == [f"message {index}" for index in range(5)]
    assert everything.first_id == everything.data[0].id and everything.last_id == everything.data[-1].id

    first_page = await sdk.responses.input_items.list(response.id, order="asc", limit=2)
    assert first_page.has_more is True and len(first_page.data) == 2
    second_page = await sdk.responses.input_items.list(response.id, order="asc", limit=2, after=first_page.last_id)
    assert [item.content[0].text for item in second_page.data] == ["message 2", "message 3"]

    newest_first = await sdk.responses.input_items.list(response.id, limit=2)  # default order: desc
    assert [item.content[0].text for item in newest_first.data] == ["message 4", "message 3"]

    paged = [item.id async for item in sdk.responses.input_items.list(response.id, order="asc", limit=2)]
    assert paged == [item.id for item in everything.data]

    async with openai.AsyncOpenAI(base_url=str(sdk.base_url), api_key="t") as plain:
        before = await plain.get(
            f"/responses/{response.id}/input_items",
            cast_to=object,
            options={"params": {"order": "asc", "before": everything.data[3].id}},
        )
    assert [item["content"][0]["text"] for item in before["data"]] == ["message 0", "message 1", "message 2"]


async def test_health_reports_every_part(stack: Stack):
    async with stack.http() as http:
        answer = await http.get("/health")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ok", "api": "ok", "store": "ok", "temporal": "ok", "worker": "ok"}


async def test_workflow_queries_show_state_and_output(sdk: openai.AsyncOpenAI, stack: Stack, model: str):
    response = await sdk.responses.create(model=model, input="query me")
    handle = stack.client.get_workflow_handle(response.id)
    assert await handle.query("state") == "completed"
    snapshot = await handle.query("response")
    assert snapshot["status"] == "completed"
    assert snapshot["output"][0]["content"][0]["text"] == "echo: query me"
