"""The guardrails' pure parts: windows of streamed text, results merged, Llama Guard's answers
parsed, the demo's classifier, a project's policy made no weaker, the moderation registry."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from demo import keyword_moderation
from guardrails.llama_guard import HAZARDS, MalformedVerdictError, classifier_prompt, parse_verdict
from guardrails.settings import ModerationSettingError, ModerationSettings
from guardrails.windows import window_end
from models.moderation import (
    CATEGORIES,
    NOT_PRODUCED,
    NOT_REQUESTED,
    UNAVAILABLE,
    ModerationFailure,
    ModerationPlan,
    ModerationProgress,
    ModerationResult,
    ModerationSetting,
    blocks,
    merged_side,
)
from upstream.registry import ModelRegistry, parse_registry

TEXTS = st.text(alphabet=st.sampled_from("ab .!?\n\t,x"), max_size=400)


def windows_of(text: str, window_chars: int) -> list[str]:
    """Every window of a complete text, in order."""
    windows, rest = [], text
    while rest:
        end = window_end(rest, window_chars, final=True)
        assert end is not None and 0 < end <= len(rest)
        windows.append(rest[:end])
        rest = rest[end:]
    return windows


@given(text=TEXTS, window_chars=st.integers(min_value=16, max_value=120))
def test_windows_cover_the_text_in_order_and_none_is_too_long(text, window_chars):
    windows = windows_of(text, window_chars)
    assert "".join(windows) == text
    assert all(len(window) <= window_chars for window in windows)


@given(
    words=st.lists(st.from_regex(r"[a-z]{1,12}", fullmatch=True), min_size=1, max_size=80),
    window_chars=st.integers(min_value=16, max_value=120),
)
def test_a_word_is_never_split_between_two_windows(words, window_chars):
    text = " ".join(words)
    for window in windows_of(text, window_chars):
        for piece in window.split():
            assert piece in words


@given(
    words=st.lists(st.from_regex(r"[a-z]{1,12}[.!?]?", fullmatch=True), min_size=1, max_size=60),
    cuts=st.lists(st.integers(min_value=1, max_value=30), max_size=40),
    window_chars=st.integers(min_value=16, max_value=120),
)
def test_windows_taken_as_a_stream_comes_never_split_a_word(words, cuts, window_chars):
    """Chunks arrive at any boundaries; a window is taken whenever one is complete, the rest
    at the end: together they are the text, and none splits a word."""
    text = " ".join(words)
    released, arrived = 0, 0
    windows = []
    for cut in [*cuts, len(text)]:
        arrived = min(len(text), arrived + cut)
        final = arrived == len(text)
        while (end := window_end(text[released:arrived], window_chars, final=final)) is not None:
            windows.append(text[released : released + end])
            released += end
        if final:
            break
    assert "".join(windows) == text
    for window in windows:
        assert all(piece in words for piece in window.split())


def test_a_window_ends_after_whole_sentences_and_waits_for_one():
    assert window_end("It rains. It po", 200, final=False) == len("It rains.")
    assert window_end("It rains", 200, final=False) is None
    assert window_end("It rains", 200, final=True) == len("It rains")
    assert window_end("One. Two. Thr", 200, final=False) == len("One. Two.")
    long = "word " * 60
    assert window_end(long, 50, final=False) == 50  # cut after the last space within the window


def result(flagged: bool, **scores: float) -> ModerationResult:
    clean = ModerationResult.clean("m")
    return clean.model_copy(
        update={
            "flagged": flagged,
            "categories": {name: name in scores and scores[name] > 0.5 for name in CATEGORIES},
            "category_scores": {name: scores.get(name, 0.0) for name in CATEGORIES},
        }
    )


SCORES = st.dictionaries(st.sampled_from(CATEGORIES), st.floats(min_value=0, max_value=1), max_size=4)


@given(first=SCORES, second=SCORES, a=st.booleans(), b=st.booleans())
def test_results_merge_flagged_if_either_categories_or_ed_scores_the_highest(first, second, a, b):
    merged = result(a, **first).merged(result(b, **second))
    assert merged.flagged == (a or b)
    for name in CATEGORIES:
        assert merged.category_scores[name] == max(first.get(name, 0.0), second.get(name, 0.0))
        assert merged.categories[name] == (first.get(name, 0) > 0.5 or second.get(name, 0) > 0.5)
    assert merged == result(b, **second).merged(result(a, **first))


def test_a_failed_check_stays_in_its_side_and_blocks_unless_failing_open():
    down = ModerationFailure(code=UNAVAILABLE, message="moderation model 'm' could not answer")
    assert merged_side(merged_side(None, down), result(False)) == down
    assert merged_side(result(True, violence=0.9), result(False)).flagged
    assert blocks("score", down, fail_open=False) and not blocks("score", down, fail_open=True)
    assert blocks("block", result(True), fail_open=True) and not blocks("score", result(True), fail_open=False)


def test_what_a_response_says_of_each_side_validates_in_the_sdk():
    from openai.types.responses.response import Moderation

    plan = ModerationPlan(model="m", input="block", output=None)
    blocked = ModerationProgress(input=result(True, violence=0.9), input_blocked=True).concluded(plan)
    assert blocked.output.code == NOT_PRODUCED
    unasked = ModerationProgress(input=result(False)).concluded(plan)
    assert unasked.output.code == NOT_REQUESTED
    nothing = ModerationProgress().concluded(ModerationPlan(model="m", input="score", output="score"))
    assert not nothing.input.flagged and not nothing.output.flagged
    for each in (blocked, unasked, nothing):
        Moderation.model_validate(each.model_dump(mode="json"))


def test_a_policy_without_modes_scores_both_sides_and_a_projects_is_never_weakened():
    assert ModerationPlan.of(ModerationSetting(model="m")).input == "score"
    settings = ModerationSettings.from_env(
        {"MODERATION_REQUIRED": '{"*": {"model": "omni-moderation-latest", "input": "block"}}'}
    )
    required = settings.required_for("any project")
    assert required is not None and required.input == "block" and required.output is None
    with pytest.raises(ModerationSettingError, match=r"MODERATION_REQUIRED\['p'\]\.input"):
        ModerationSettings.from_env({"MODERATION_REQUIRED": '{"p": {"model": "m", "input": "loud"}}'})
    with pytest.raises(ModerationSettingError, match="MODERATION_RETRY_SECONDS"):
        ModerationSettings.from_env({"MODERATION_RETRY_SECONDS": "0"})


@pytest.mark.parametrize(
    ("answer", "found"),
    [
        ("safe", set()),
        ("  safe\n", set()),
        ("unsafe\nS1,S10", {"violence", "illicit/violent", "hate"}),
        ("unsafe\nS11", {"self-harm"}),
        ("unsafe\nS7", set()),
        ("unsafe", set()),
    ],
)
def test_llama_guards_verdicts_are_parsed(answer, found):
    verdict = parse_verdict(answer, "llama-guard")
    assert verdict.flagged == answer.strip().startswith("unsafe")
    assert {name for name, yes in verdict.categories.items() if yes} == found
    assert all(verdict.category_scores[name] == 1.0 for name in found)


@pytest.mark.parametrize("answer", ["", "I think it is fine", "unsafe\nS99", "unsafe\nviolence", "safe\nS1", "SAFE!"])
def test_an_answer_that_is_no_verdict_is_an_error_not_safe(answer):
    with pytest.raises(MalformedVerdictError):
        parse_verdict(answer, "llama-guard")


def test_the_classifier_prompt_lists_every_hazard_and_holds_the_text():
    prompt = classifier_prompt("hello there")
    assert "User: hello there" in prompt and all(f"{code}: " in prompt for code in HAZARDS)


def test_the_demo_classifier_finds_whole_words_in_linear_time():
    assert keyword_moderation.found_in("Let us kill the lights") == {"violence"}
    assert keyword_moderation.found_in("skill and killer are other words") == set()
    assert keyword_moderation.classify("I will hurt you, idiot", "m").categories["harassment/threatening"]
    long = "a calm sentence. " * 20_000 + "murder"
    assert keyword_moderation.found_in(long) == {"violence"}
    answer = keyword_moderation.moderations_answer({"model": "m", "input": ["fine", "stab"]})
    assert [each["flagged"] for each in answer["results"]] == [False, True]


def test_the_registry_knows_its_moderation_models():
    registry, _ = parse_registry(
        {
            "model_list": [
                {"model_name": "chat", "litellm_params": {"model": "openai/x", "api_base": "http://a/v1"}},
                {
                    "model_name": "guard",
                    "litellm_params": {"model": "openai/llama-guard", "api_base": "http://a/v1"},
                    "model_info": {"mode": "moderation", "moderation_format": "llama_guard"},
                },
            ]
        },
        "test",
        {},
    )
    assert [d.moderation_format for d in registry.moderation_deployments("guard")] == ["llama_guard"]
    assert registry.moderation_deployments("chat") == []
    assert registry.moderation_deployments("omni-moderation-latest") == []  # no `*` entry serves it
    assert len(ModelRegistry.single("http://b/v1").moderation_deployments("omni-moderation-latest")) == 1
