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
