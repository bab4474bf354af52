"""Streamed text held by an output `block` policy: whatever the chunking and the window size,
no delta ever holds a flagged word, what was sent is exactly what the reply keeps, and a reply
with nothing flagged goes out whole. The real assembler, and the demo's classifier behind the
real `Moderator` (the demo backend is in-process: nothing is faked)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from chat_completions.stream_assembler import StreamAssembler
from demo.backend import DEMO_BASE_URL
from guardrails.held_output import HeldOutput
from guardrails.moderator import Moderator
from models.moderation import ModerationPlan
from upstream.clients import Upstreams
from upstream.registry import ModelRegistry

WORDS = st.lists(st.from_regex(r"[a-h]{1,9}[.!?]?", fullmatch=True), max_size=50)


def pieces(text: str, cuts: list[int]) -> list[str]:
    out, at = [], 0
    for cut in cuts:
        if at >= len(text):
            break
        out.append(text[at : at + cut])
        at += cut
    if at < len(text):
        out.append(text[at:])
    return out


async def streamed(text: str, cuts: list[int], window_chars: int) -> tuple[str, bool, str, str]:
    """(what the deltas sent, blocked, the final message's text, the chat message's text)."""
    moderator = Moderator(ModelRegistry.single(DEMO_BASE_URL), Upstreams())
    plan = ModerationPlan(model="omni-moderation-latest", output="block", window_chars=window_chars)
    assembler = StreamAssembler(0)
    held = HeldOutput(moderator, plan, "project", "resp_test", kick=lambda: None)
    assembler.ceiling = held.ceiling
    sent: list[str] = []

    def take(events: list) -> None:
        sent.extend(event.delta for event in events if event.type == "response.output_text.delta")

    for piece in pieces(text, cuts):
        take(assembler.feed({"content": piece}))
        held.offer(assembler.items)
        await asyncio.sleep(0.001)
        take(assembler.pending_deltas())
        if held.blocked:
            break
    await held.finish(assembler.items)
    if held.blocked:
        take(assembler.withhold())
    events, output, message = assembler.finish()
    take(events)
    final = output[0].content[0].text if output else ""
    return "".join(sent), held.blocked, final, message["content"] or ""


@settings(max_examples=40, deadline=None)
@given(
    before=WORDS,
    after=WORDS,
    cuts=st.lists(st.integers(min_value=1, max_value=25), max_size=60),
    window_chars=st.integers(min_value=16, max_value=90),
)
def test_no_delta_ever_holds_the_flagged_word(before, after, cuts, window_chars):
    text = " ".join([*before, "then", "kill", "it.", *after])
    sent, blocked, final, message = asyncio.run(streamed(text, cuts, window_chars))
    assert blocked and "kill" not in sent
    assert final == sent == message  # the reply keeps what was sent, no more
    assert text.startswith(sent)


@settings(max_examples=30, deadline=None)
@given(words=WORDS, cuts=st.lists(st.integers(min_value=1, max_value=25), max_size=60))
def test_a_clean_reply_goes_out_whole(words, cuts):
    text = " ".join(words) or "fine"
    sent, blocked, final, _ = asyncio.run(streamed(text, cuts, 40))
    assert not blocked and sent == final == text


# ---- issue 60: everything a client can read is held (M1 logprobs, M2 refusals, M3 windows, L6) ----


def logprob(token: str) -> dict:
    return {"token": token, "logprob": -0.5, "bytes": list(token.encode()), "top_logprobs": []}


async def held_stream(chunks: list[dict], window_chars: int) -> tuple[list, bool, list, dict]:
    """(every delta event sent, blocked, the final output, the chat message)."""
    moderator = Moderator(ModelRegistry.single(DEMO_BASE_URL), Upstreams())
    plan = ModerationPlan(model="omni-moderation-latest", output="block", window_chars=window_chars)
    assembler = StreamAssembler(0)
    held = HeldOutput(moderator, plan, "project", "resp_test", kick=lambda: None)
    assembler.ceiling = held.ceiling
    sent: list = []

    def take(events: list) -> None:
        sent.extend(event for event in events if event.type.endswith(".delta"))

    for chunk in chunks:
        take(assembler.feed(chunk["delta"], chunk.get("logprobs")))
        held.offer(assembler.held_items())
        await asyncio.sleep(0.001)
        take(assembler.pending_deltas())
        if held.blocked:
            break
    await held.finish(assembler.held_items())
    if held.blocked:
        take(assembler.withhold())
    events, output, message = assembler.finish()
    take(events)
    return sent, held.blocked, output, message


def tokens_of(text: str, cuts: list[int]) -> list[str]:
    return [piece for piece in pieces(text, cuts) if piece]


@settings(max_examples=40, deadline=None)
@given(
    before=WORDS,
    after=WORDS,
    cuts=st.lists(st.integers(min_value=1, max_value=12), max_size=80),
    window_chars=st.integers(min_value=16, max_value=90),
)
def test_no_logprob_is_sent_before_its_text_passed(before, after, cuts, window_chars):
    """M1: the tokens of a blocked sentence were in `output_text.done` and the end; a passing
    window's delta carried the log probabilities of text not yet checked."""
    text = " ".join([*before, "then", "kill", "it.", *after])
    chunks = [{"delta": {"content": token}, "logprobs": [logprob(token)]} for token in tokens_of(text, cuts)]
    sent, blocked, output, _ = asyncio.run(held_stream(chunks, window_chars))
    assert blocked
    streamed = "".join(event.delta for event in sent)
    streamed_tokens = "".join(entry["token"] for event in sent for entry in event.logprobs)
    assert streamed.startswith(streamed_tokens), (streamed, streamed_tokens)  # never ahead of the text
    final = output[0].content[0]
    kept_tokens = "".join(entry["token"] for entry in final.logprobs)
    assert final.text == streamed and final.text.startswith(kept_tokens), (final.text, kept_tokens)
    assert "kill" not in streamed_tokens and "kill" not in kept_tokens  # a token the cut split waits, unsent


@settings(max_examples=25, deadline=None)
@given(words=WORDS, cuts=st.lists(st.integers(min_value=1, max_value=12), max_size=80))
def test_a_clean_reply_keeps_every_logprob(words, cuts):
    text = " ".join(words) or "fine"
    chunks = [{"delta": {"content": token}, "logprobs": [logprob(token)]} for token in tokens_of(text, cuts)]
    sent, blocked, output, _ = asyncio.run(held_stream(chunks, 40))
    assert not blocked
    assert "".join(entry["token"] for event in sent for entry in event.logprobs) == text
    assert "".join(entry["token"] for entry in output[0].content[0].logprobs) == text


@settings(max_examples=25, deadline=None)
@given(words=WORDS, flagged=st.booleans(), cuts=st.lists(st.integers(min_value=1, max_value=12), max_size=40))
def test_a_streamed_refusal_is_checked_before_it_is_kept(words, flagged, cuts):
    """M2: a flagged refusal completed unflagged when streamed (the non-streamed one was blocked)."""
    refusal = "I will not help you murder anyone." if flagged else "I cannot help with that."
    chunks = [{"delta": {"refusal": piece}} for piece in tokens_of(refusal, cuts)]
    _, blocked, output, _ = asyncio.run(held_stream(chunks, 40))
    refusals = [part.refusal for item in output for part in item.content if part.type == "refusal"]
    if flagged:
        assert blocked and refusals == [], refusals
    else:
        assert not blocked and refusals == [refusal]


PHRASE = ("launder", "money")
"""Flagged together (the demo classifier's `launder money`), not apart."""


@settings(max_examples=50, deadline=None)
@given(
    before=WORDS,
    after=WORDS,
    window_chars=st.integers(min_value=16, max_value=60),
    cuts=st.lists(st.integers(min_value=1, max_value=25), max_size=60),
    pad=st.integers(min_value=0, max_value=60),
)
def test_a_phrase_across_any_window_boundary_is_checked_whole(before, after, window_chars, cuts, pad):
    """M3: a flagged two-word phrase whose first word ended one window and whose second began
    the next streamed whole. Placed wherever the windows fall (the padding moves it across
    every boundary), it never goes out whole."""
    text = " ".join([*before, "x" * 0 + "a" * min(pad, 8) * (pad // 8 + 1), *PHRASE, "now.", *after])
    chunks = [{"delta": {"content": piece}} for piece in tokens_of(text, cuts)]
    sent, blocked, output, _ = asyncio.run(held_stream(chunks, window_chars))
    streamed = "".join(event.delta for event in sent)
    assert " ".join(PHRASE) not in " ".join(streamed.split())
    assert blocked


LONG_PHRASE = "you will pay for this"
"""Longer than the smallest window: it may span three of them."""


@settings(max_examples=50, deadline=None)
@given(
    before=WORDS,
    after=WORDS,
    window_chars=st.integers(min_value=16, max_value=20),
    cuts=st.lists(st.integers(min_value=1, max_value=25), max_size=60),
    pad=st.integers(min_value=0, max_value=40),
)
def test_a_phrase_longer_than_a_window_is_checked_whole(before, after, window_chars, cuts, pad):
    """L4 (second review): each window was checked with the one before it alone, so a phrase
    across three small windows was never seen whole; now with `CONTEXT_CHARS` of the text
    before it."""
    text = " ".join([*before, "b" * pad, LONG_PHRASE, "now.", *after])
    chunks = [{"delta": {"content": piece}} for piece in tokens_of(text, cuts)]
    sent, blocked, _, _ = asyncio.run(held_stream(chunks, window_chars))
    streamed = "".join(event.delta for event in sent)
    assert LONG_PHRASE not in " ".join(streamed.split())
    assert blocked


@settings(max_examples=30, deadline=None)
@given(
    thought=WORDS,
    answer=WORDS,
    window_chars=st.integers(min_value=16, max_value=60),
    cuts=st.lists(st.integers(min_value=1, max_value=25), max_size=60),
)
def test_reasoning_and_the_message_are_one_text(thought, answer, window_chars, cuts):
    """L6: a phrase split between the end of the reasoning and the start of the message passed:
    each item was windowed alone."""
    reasoning = " ".join([*thought, PHRASE[0]])
    message = " ".join([PHRASE[1], *answer])
    chunks = [{"delta": {"reasoning_content": piece}} for piece in tokens_of(reasoning, cuts)]
    chunks += [{"delta": {"content": piece}} for piece in tokens_of(message, cuts)]
    sent, blocked, _, _ = asyncio.run(held_stream(chunks, window_chars))
    assert blocked
    message_sent = "".join(event.delta for event in sent if event.type == "response.output_text.delta")
    assert not message_sent.startswith(PHRASE[1]), message_sent
