"""Prompt templates: placeholders found once each, rendering in one pass (a value that looks
like a placeholder stays as it is), and the declarations a version must make."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from models.prompts import CreatePrompt, placeholders, render, rendered_bytes

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True)


def test_placeholders_are_named_once_in_order():
    assert placeholders("{{b}} and {{ a }} and {{b}} but not {b} or {{1x}}") == ["b", "a"]


@given(values=st.dictionaries(NAMES, st.text(max_size=30), max_size=5))
def test_rendering_is_one_pass(values):
    template = " ".join(f"[{{{{{name}}}}}]" for name in values)
    rendered = render(template, values)
    assert rendered == " ".join(f"[{value}]" for value in values.values())


def test_a_value_that_looks_like_a_placeholder_is_not_rendered_again():
    assert render("{{a}} {{b}}", {"a": "{{b}}", "b": "B"}) == "{{b}} B"


def test_rendering_a_large_template_is_linear():
    template = "{{v}}" * 20_000
    assert render(template, {"v": "xy"}) == "xy" * 20_000


@pytest.mark.parametrize(
    ("prompt", "variables", "valid"),
    [
        ("Hi {{name}}", ["name"], True),
        ("Hi", ["unused"], True),
        ("Hi {{name}}", [], False),
        ("Hi", ["a", "a"], False),
        ("Hi", ["1st"], False),
    ],
)
def test_what_a_version_must_declare(prompt, variables, valid):
    try:
        CreatePrompt(prompt=prompt, variables=variables)
    except ValidationError:
        assert not valid
    else:
        assert valid


templates = st.lists(
    st.one_of(st.text(max_size=20), st.sampled_from(["{{a}}", "{{ b }}", "{{c}}", "{{missing}}", "{{", "}}"])),
    max_size=30,
).map("".join)
values = st.fixed_dictionaries({}, optional={name: st.text(max_size=50) for name in ("a", "b", "c")})


@given(templates, values)
def test_what_a_render_makes_is_known_before_it_is_made(template: str, given_values: dict[str, str]):
    """Issue 60 (H4): the size is measured from the placeholders and the values' lengths, exactly."""
    assert sum(rendered_bytes(template, given_values).values()) == len(render(template, given_values).encode())


def test_a_prompt_that_would_render_160_mb_is_measured_without_building_it():
    import tracemalloc

    template = "{{a}}" * 20_000
    tracemalloc.start()
    try:
        made = rendered_bytes(template, {"a": "x" * 8192})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert made["a"] == 20_000 * 8192 and peak < 4 * 1024 * 1024, peak
