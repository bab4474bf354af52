"""The demo model's replies, as a pure function of a chat-completions request: what it says,
which tools it calls and with what, and that no request, however odd, makes it raise."""

from __future__ import annotations

import json
from typing import Literal

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from demo.model import DEMO_MODELS, reply_to, served_model

WEATHER = {
    "type": "function",
    "function": {
        "name": "weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
DICE = {
    "type": "function",
    "function": {
        "name": "demo__roll_dice",
        "parameters": {"type": "object", "properties": {"sides": {"type": "integer", "default": 6}}},
    },
}
UNITS = {
    "type": "function",
    "function": {
        "name": "convert",
        "parameters": {
            "type": "object",
            "properties": {
                "amount": {"type": "number"},
                "unit": {"enum": ["km", "mi"]},
                "exact": {"type": "boolean"},
                "tags": {"type": "array"},
            },
            "required": ["amount", "tags"],
        },
    },
}


def _user(text: str, **body: object) -> dict:
    return {"model": "demo/echo", "messages": [{"role": "user", "content": text}], **body}


def test_it_echoes_the_last_user_message():
    body = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [{"type": "text", "text": "second"}]},
        ]
    }
    reply = reply_to(body)
    assert reply.text == "You said: second" and not reply.tool_calls and reply.finish_reason == "stop"
    assert reply.words() == ["You ", "said: ", "second"]


def test_it_calls_the_tools_a_message_names_with_arguments_from_the_message():
    reply = reply_to(_user("What is the weather in 'Paris'? Then roll dice with 20 sides.", tools=[WEATHER, DICE]))
    assert [(call.name, call.arguments) for call in reply.tool_calls] == [
        ("weather", {"city": "Paris"}),
        ("demo__roll_dice", {"sides": 20}),
    ]
    assert reply.finish_reason == "tool_calls" and reply.text == ""


def test_a_tool_not_named_is_offered_in_words_and_not_called():
    reply = reply_to(_user("hello", tools=[WEATHER]))
    assert not reply.tool_calls and "weather" in reply.text


def test_tool_choice_decides_when_the_message_does_not():
    assert [call.name for call in reply_to(_user("hi", tools=[WEATHER, DICE], tool_choice="required")).tool_calls] == [
        "weather"
    ]
    forced = {"type": "function", "function": {"name": "demo__roll_dice"}}
    assert [
        call.name for call in reply_to(_user("weather?", tools=[WEATHER, DICE], tool_choice=forced)).tool_calls
    ] == ["demo__roll_dice"]
    assert not reply_to(_user("weather?", tools=[WEATHER], tool_choice="none")).tool_calls
    one = reply_to(_user("weather and roll dice", tools=[WEATHER, DICE], parallel_tool_calls=False))
    assert [call.name for call in one.tool_calls] == ["weather"]


def test_arguments_follow_the_schema():
    reply = reply_to(_user("convert 3.5 please", tools=[UNITS]))
    assert reply.tool_calls[0].arguments == {"amount": 3.5, "unit": "km", "exact": True, "tags": []}


def test_after_tool_results_it_says_what_each_answered():
    body = {
        "messages": [
            {"role": "user", "content": "weather in Paris and Rome"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": "{}"}},
                    {"id": "call_2", "type": "function", "function": {"name": "demo__roll_dice", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": "rolled a 4"},
        ]
    }
    assert reply_to(body).text == "The tool weather answered: sunny. The tool demo__roll_dice answered: rolled a 4."


def test_a_reply_longer_than_max_tokens_is_cut_as_models_do():
    reply = reply_to(_user("one two three four five", max_tokens=3))
    assert reply.text == "You said: one" and reply.finish_reason == "length"


def test_every_model_but_a_demo_one_is_served_as_demo_echo():
    assert served_model("gpt-4o") == "demo/echo"
    assert served_model("demo/slow") == "demo/slow"
    assert set(DEMO_MODELS) == {"demo/echo", "demo/slow", "demo/flaky", "demo/fail"}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
_content = _json | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _json}), max_size=3)
_call = st.fixed_dictionaries(
    {},
    optional={"id": _json, "function": st.fixed_dictionaries({}, optional={"name": _json, "arguments": _json}) | _json},
)
_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system", 7])},
    optional={"content": _content, "tool_calls": st.lists(_call, max_size=3) | _json, "tool_call_id": _json},
)
_tool = st.one_of(
    st.just(WEATHER),
    st.just(DICE),
    st.just(UNITS),
    _json,
    st.fixed_dictionaries(
        {
            "type": st.just("function"),
            "function": st.fixed_dictionaries({"name": st.text(max_size=12)}, optional={"parameters": _json}),
        }
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(_message | _json, max_size=6),
    tools=st.lists(_tool, max_size=4) | _json,
    tool_choice=_json | st.sampled_from(["auto", "required", "none"]),
    limit=_json,
)
def test_no_request_makes_the_demo_model_raise(messages, tools, tool_choice, limit):
    """The demo answers whatever a client manages to send through the server: it must never
    be the thing that breaks a response."""
    reply = reply_to({"messages": messages, "tools": tools, "tool_choice": tool_choice, "max_tokens": limit})
    assert reply.finish_reason in ("stop", "length", "tool_calls")
    json.dumps([call.arguments for call in reply.tool_calls])


def test_asked_to_compact_it_lists_what_the_user_said_and_quotes_the_summary_after():
    from context.compaction import CompactionContent, rendered, summariser_messages

    context = [
        {"role": "user", "content": "my name is Ada"},
        {"role": "assistant", "content": "You said: ..."},
        {"role": "user", "content": "I like tea"},
    ]
    summary = reply_to({"model": "demo/echo", "messages": summariser_messages(context)}).text
    assert summary == reply_to({"model": "demo/echo", "messages": summariser_messages(context)}).text
    assert '"my name is Ada"' in summary and '"I like tea"' in summary
    after = rendered("cmp_1", CompactionContent(summary=summary, kept=[{"role": "user", "content": "who am I?"}]))
    answer = reply_to({"model": "demo/echo", "messages": after}).text
    assert answer.startswith("You said: who am I?") and "my name is Ada" in answer


# ---- JSON that fits a schema (`demo/json_answer.py`) -----------------------------------------


class Address(BaseModel):
    street: str
    zip_code: str = Field(min_length=5)


class Customer(BaseModel):
    name: str
    age: int = Field(ge=18)
    score: float = Field(gt=0.5)
    tags: list[str] = Field(min_length=2)
    home: Address
    other: Address | None
    level: Literal["gold", "silver"]
    friends: list[Customer]


def test_a_json_schema_is_answered_with_json_that_fits_it():
    from openai.lib._pydantic import to_strict_json_schema

    for schema in (Customer.model_json_schema(), to_strict_json_schema(Customer)):
        body = {
            "messages": [{"role": "user", "content": "make one"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema}},
        }
        customer = Customer.model_validate_json(reply_to(body).text)
        assert customer.age >= 18 and len(customer.tags) >= 2 and customer.level == "gold"


@given(
    schema=st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5)),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    ["type", "properties", "items", "$ref", "anyOf", "enum", "minItems", "minLength", "allOf", "x"]
                ),
                children,
                max_size=5,
            )
        ),
        max_leaves=30,
    )
)
def test_any_schema_gets_an_answer_of_bounded_size(schema):
    body = {
        "messages": [{"role": "user", "content": "x"}],
        "response_format": {"type": "json_schema", "json_schema": {"schema": schema}},
    }
    answer = reply_to(body).text
    json.loads(answer)
    assert len(answer) < 2_000_000


def test_a_schema_that_refers_to_itself_stops():
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    }
    body = {"messages": [], "response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    assert json.loads(reply_to(body).text)["next"]["next"] is not None


def test_a_schema_that_merges_itself_stops():
    schema = {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}], "type": "object"}}, "$ref": "#/$defs/a"}
    body = {"messages": [], "response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    assert isinstance(json.loads(reply_to(body).text), dict)
