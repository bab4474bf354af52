"""What input items must be beyond their types (`response_service/input_checks.py`): a call's
output after its call, images and files inline, a `compaction_trigger` last. Each refusal
names the item (and part) it is about."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from models.errors import InvalidRequestError
from models.items import InputItem
from response_service.input_checks import check_items

_input_item: TypeAdapter[Any] = TypeAdapter(InputItem)


def items(*raw: dict[str, Any]) -> list[Any]:
    """Items as `prepare` has them (a message's `type` may be left out, as clients do)."""
    return [_input_item.validate_python({"type": "message"} | item if "role" in item else item) for item in raw]


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


def refusal(found: list[Any], known: set[str] | None = None) -> InvalidRequestError:
    with pytest.raises(InvalidRequestError) as raised:
        check_items(found, set() if known is None else known)
    return raised.value


def test_an_output_follows_its_call_in_the_input_or_before_it() -> None:
    check_items(items(call("a"), output("a")), set())
    check_items(items(output("b")), {"b"})  # a call of the response continued from


def test_an_output_of_no_call_is_refused_naming_its_item() -> None:
    error = refusal(items({"role": "user", "content": "hi"}, output("a"), call("a")))
    assert error.param == "input[1]" and "call_id a" in error.message


@given(st.permutations(["call", "output", "message"]))
def test_an_output_is_accepted_exactly_when_its_call_came_first(order: list[str]) -> None:
    raw = {"call": call("c"), "output": output("c"), "message": {"role": "user", "content": "hi"}}
    found = items(*(raw[kind] for kind in order))
    if order.index("call") < order.index("output"):
        check_items(found, set())
    else:
        assert refusal(found).param == f"input[{order.index('output')}]"


def test_images_and_files_come_inline() -> None:
    image = {
        "role": "user",
        "content": [{"type": "input_text", "text": "see"}, {"type": "input_image", "file_id": "f"}],
    }
    assert refusal(items(image)).param == "input[0].content[1]"
    file = {"role": "user", "content": [{"type": "input_file", "file_id": "file_1"}]}
    assert refusal(items(file)).param == "input[0].content[0]"
    inline = {"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64,AA=="}]}
    check_items(items(inline), set())


def test_a_compaction_trigger_comes_last() -> None:
    trigger = {"type": "compaction_trigger"}
    check_items(items({"role": "user", "content": "hi"}, trigger), set())
    assert refusal(items(trigger, {"role": "user", "content": "hi"})).param == "input[0]"
