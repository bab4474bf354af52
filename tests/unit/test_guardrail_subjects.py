"""What a moderation check looks at (`guardrails/subjects.py`): each input item's text and
images, tool outputs' text, a reply's words as one subject; and what a blocked reply keeps."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from guardrails.moderator import Subject
from guardrails.subjects import input_subjects, output_subject, tool_subjects, withheld
from models.items import OutputItem

_output_item: TypeAdapter[Any] = TypeAdapter(OutputItem)


def test_each_message_and_tool_output_is_a_subject_of_its_own() -> None:
    listed = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "https://example.com/a.png"},
            ],
        },
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"not": "checked"}'},
        {"type": "function_call_output", "call_id": "c", "output": "the tool said"},
        {"type": "mcp_call_output", "output": [{"type": "input_text", "text": "listed"}]},
        {"type": "message", "role": "user", "content": []},
    ]
    assert input_subjects(listed) == [
        Subject("hello"),
        Subject("look", ("https://example.com/a.png",)),
        Subject("the tool said"),
        Subject("listed"),
    ]


@given(st.dictionaries(st.text(max_size=5), st.text(max_size=20), max_size=5))
def test_a_tool_result_that_says_nothing_is_not_checked(texts: dict[str, str]) -> None:
    assert tool_subjects(texts) == [Subject(text) for text in texts.values() if text.strip()]


def reply() -> list[Any]:
    return [
        _output_item.validate_python(item)
        for item in (
            {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]},
            {"type": "message", "id": "msg_1", "content": [{"type": "output_text", "text": "the answer"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "c", "name": "f", "arguments": '{"q": 1}'},
        )
    ]


def test_a_reply_is_one_subject_of_its_words_reasoning_and_arguments() -> None:
    """Arguments as their JSON and as the strings it decodes to (the keys too): what a client
    may be shown of them."""
    assert output_subject(reply()) == Subject('hm\nthe answer\n{"q": 1}\nq')


def test_arguments_are_checked_as_a_client_reads_them() -> None:
    """The review of issue 60 (M1): `\u2014kill\u2014` in a call's JSON is no word to a
    classifier; decoded, as a custom tool's input or code shows it, it is."""
    from guardrails.subjects import readable

    escaped = '{"input": "I will \\u2014kill\\u2014 you", "more": ["a", {"b": "c"}]}'
    assert "—kill—" in readable(escaped) and "\nc" in readable(escaped)
    assert readable("not json") == "not json"


def test_a_withheld_reply_keeps_no_words_and_no_calls() -> None:
    kept = withheld(reply())
    assert [item.type for item in kept] == ["reasoning", "message"]
    assert all(item.status == "incomplete" for item in kept)
    assert output_subject(kept).empty
