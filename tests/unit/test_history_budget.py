"""What travels through Temporal's history (`models/history_budget.py`): a large item travels as
a stub within the budget, and comes back whole; a small one travels as it is."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

from models.history_budget import PARK_ITEM_BYTES, restored, should_park, size_of, split, stubbed
from models.items import OutputItem

_output_item: TypeAdapter[Any] = TypeAdapter(OutputItem)

texts = st.text(max_size=40_000)


def message(text: str, item_id: str = "msg_1") -> BaseModel:
    return _output_item.validate_python(  # type: ignore[no-any-return]
        {"type": "message", "id": item_id, "content": [{"type": "output_text", "text": text}]}
    )


def call(arguments: str, output: str | None = None) -> BaseModel:
    return _output_item.validate_python(  # type: ignore[no-any-return]
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "server_label": "s",
            "name": "add",
            "arguments": arguments,
            "output": output,
        }
    )


@given(texts)
def test_a_message_travels_within_the_budget_and_comes_back_whole(text: str) -> None:
    item = message(text)
    carried, parked = split([item])
    assert size_of(carried[0]) <= max(size_of(item), 1) and size_of(carried[0]) <= PARK_ITEM_BYTES
    assert restored(carried[0], parked.get("msg_1", {})) == item
    assert ("msg_1" in parked) == (size_of(item) > PARK_ITEM_BYTES)


@given(texts, st.one_of(st.none(), texts))
def test_a_calls_arguments_and_output_come_back_whole(arguments: str, output: str | None) -> None:
    item = call(arguments, output)
    carried, parked = split([item])
    assert size_of(carried[0]) <= PARK_ITEM_BYTES
    assert restored(carried[0], parked.get("mcp_1", {})) == item


def test_a_small_item_is_not_parked() -> None:
    item = message("short")
    assert not should_park(item)
    assert split([item]) == ([item], {})


def test_a_field_set_since_the_stub_was_made_is_not_overwritten() -> None:
    """A failed call's error, set by the workflow after its arguments were parked, stays."""
    item = call("x" * (PARK_ITEM_BYTES + 1))
    carried, parked = split([item])
    failed = carried[0].model_copy(update={"output": "the workflow's own"})
    assert restored(failed, parked["mcp_1"] | {"output": "parked"}).output == "the workflow's own"


def test_a_function_calls_stub_keeps_what_the_workflow_decides_on() -> None:
    """Its name and call id (the workflow routes the call by them); its arguments wait."""
    item = _output_item.validate_python(
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "x" * PARK_ITEM_BYTES}
    )
    assert should_park(item)
    stub = stubbed(item)
    assert (stub.name, stub.call_id, stub.arguments) == ("f", "call_1", "")
