"""A chat completion's reply as the Responses API reports it (`chat_completions/reply.py`)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from chat_completions.reply import finish_reason, present, usage, with_call_ids

KNOWN_REASONS = ("stop", "length", "tool_calls", "content_filter")


@pytest.mark.parametrize("reason", KNOWN_REASONS)
def test_a_known_finish_reason_is_kept(reason: str) -> None:
    assert finish_reason(reason, {"tool_calls": [{"id": "c"}]}) == reason


@given(st.one_of(st.none(), st.text()), st.booleans())
def test_any_other_is_read_from_the_message(reason: str | None, calls: bool) -> None:
    assume(reason not in KNOWN_REASONS)
    message: dict[str, Any] = {"tool_calls": [{"id": "c"}]} if calls else {"content": "hi"}
    assert finish_reason(reason, message) == ("tool_calls" if calls else "stop")


def test_a_call_without_an_id_gets_one_and_one_with_an_id_keeps_it() -> None:
    message = with_call_ids({"tool_calls": [{"id": "call_kept"}, {"id": ""}, {}]})
    ids = [call["id"] for call in message["tool_calls"]]
    assert ids[0] == "call_kept" and all(ids) and len(set(ids)) == 3


def test_usage_maps_cached_and_reasoning_tokens_and_a_missing_one_is_zero() -> None:
    mapped = usage(
        {
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": None},
        }
    )
    assert (mapped.input_tokens, mapped.output_tokens, mapped.total_tokens) == (10, 5, 15)
    assert mapped.input_tokens_details.cached_tokens == 4
    assert mapped.output_tokens_details.reasoning_tokens == 0
    assert usage(None) == usage({})


def test_keys_a_backend_sent_as_null_are_left_out() -> None:
    assert present({"content": None, "role": "assistant", "refusal": None}) == {"role": "assistant"}
