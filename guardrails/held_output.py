"""Streamed output held back until its window's moderation check passed (an `output: block`
policy), between the stream assembler and the event log.

The assembler asks `ceiling(item)` how much of an item's text may be sent; the event log and
every client, a resumed stream and a webhook read only what was sent, so text beyond the
ceiling is seen by no one. After each batch of chunks `offer` starts checking the windows that
are complete (`windows.py`), unless a check runs: the windows that came meanwhile go together
in the next call (up to `WINDOWS_A_CHECK`, each classified on its own), so a fast stream costs
a round trip per batch of windows, not per window.

Windows overlap: each is checked with the text before it (`Subject(before + window)`, at least
`CONTEXT_CHARS` of it), so a phrase across a window's boundary, or across several small
windows, is checked whole. The reply's items are one text: an item's last window is complete
once a later item has begun (reasoning, then the message), and the message's first window is
checked with the reasoning's end. A refusal, and a call's arguments, are checked whole, with
the text before them; arguments both as the JSON they are and as the strings that JSON
decodes to (what a client is shown of them: a custom tool's input, code, commands). A retried
call's text is checked from its start (`ceiling`). A window that passes raises its item's
ceiling, and `kick` has the writer send it. A flagged window blocks: the stream stops, and the
turn ends with the text of the windows before it. When the backend cannot answer within the
plan's budget the turn fails closed (blocked, the failure recorded), or open when the plan
says (the rest is released unchecked). A call's arguments are checked whole when the reply is
complete, before they are sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from guardrails.moderator import Moderator, Subject
from guardrails.subjects import readable
from guardrails.windows import window_end
from models.moderation import (
    MAX_INPUTS,
    ModerationFailure,
    ModerationPlan,
    ModerationResult,
    SideResult,
    merged_side,
)
from models.responses import Response

STREAMED_KINDS = ("message", "reasoning")
"""Items whose text streams as it comes (window by window here); any other's is checked whole."""
CONTEXT_CHARS = 256
"""Each window is checked with at least this much of the text before it (a phrase longer than a
small window, across three of them, is still checked whole)."""


class GrowingText(Protocol):
    @property
    def length(self) -> int: ...

    def tail(self, characters: int) -> str: ...


class HeldItem(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def sent(self) -> int: ...
    @property
    def growing(self) -> GrowingText: ...


WINDOWS_A_CHECK = MAX_INPUTS
"""Complete windows classified in one call (each its own result): under a fast stream the
windows waiting for a check go together, not one round trip each (as many as this server's
`/v1/moderations` takes in one request)."""


@dataclass(frozen=True)
class Window:
    end: int
    """Where it ends in its item's text."""
    text: str


@dataclass
class Unchecked:
    """An item's text from `start` on, read up to `seen`, that no check has passed yet."""

    start: int
    seen: int
    text: str = ""


class HeldOutput:
    def __init__(
        self, moderator: Moderator, plan: ModerationPlan, project: str, response_id: str, kick: Callable[[], None]
    ) -> None:
        self.moderator = moderator
        self.plan = plan
        self.project = project
        self.response_id = response_id
        self.kick = kick
        self.passed: dict[str, int] = {}
        """Characters of each item's text checked and passed (from where the turn started it)."""
        self.result: SideResult | None = None
        self.blocked = False
        self.unchecked = False
        """The backend failed and the plan fails open: the rest goes out unchecked."""
        self._checking: asyncio.Task[None] | None = None
        self._unchecked: dict[str, Unchecked] = {}
        self._before = ""
        """The end of the text that passed (of any item, `CONTEXT_CHARS` or a window, whichever
        is more): the next window is checked with it."""
        self._before_item = ""

    @classmethod
    def of(cls, moderator: Moderator, response: Response, project: str, kick: Callable[[], None]) -> HeldOutput | None:
        """The response's output held (an `output: block` plan), or None: sent as it comes."""
        plan = response.moderation_plan
        if plan is None or not plan.holds_output:
            return None
        return cls(moderator, plan, project, response.id, kick)

    def found(self) -> SideResult:
        """What the checks found (nothing to check: a clean result)."""
        return self.result or ModerationResult.clean(self.plan.model)

    def ceiling(self, item: HeldItem) -> int:
        """How much of the item's text has passed: what may be sent, and what a blocked reply
        keeps. A retried call's text is checked from its start: the text an earlier attempt sent
        passed then, but the new attempt's may differ from it (a model is not deterministic),
        and what it says beyond what was sent goes out only once it passed."""
        if self.unchecked:
            return item.growing.length
        return self.passed.get(item.id, 0)

    def offer(self, items: Sequence[HeldItem]) -> None:
        """Text has grown: check the windows that are complete, unless a check runs."""
        if self.blocked or self.unchecked or (self._checking is not None and not self._checking.done()):
            return
        if self._next_windows(items, final=False) is not None:
            self._checking = asyncio.ensure_future(self._check_windows(items, final=False))

    async def finish(self, items: Sequence[HeldItem]) -> None:
        """The reply is complete: check what is left of every item (the last windows, the calls)."""
        if self._checking is not None:
            await self._checking
        if not (self.blocked or self.unchecked):
            await self._check_windows(items, final=True)

    async def close(self) -> None:
        """The turn ends early (an error, a cancel): stop checking."""
        if self._checking is not None and not self._checking.done():
            self._checking.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._checking

    def _next_windows(self, items: Sequence[HeldItem], *, final: bool) -> tuple[HeldItem, list[Window]] | None:
        """The first item with complete windows, and up to `WINDOWS_A_CHECK` of them in order
        (each classified on its own, in one call); a call's arguments are one, once final."""
        for position, item in enumerate(items):
            unchecked = self._read(item)
            if not unchecked.text:
                continue
            if item.type not in STREAMED_KINDS:
                if final:
                    return item, [Window(unchecked.start + len(unchecked.text), unchecked.text)]
                continue
            # An item is complete once a later one has begun: its last window is checked before
            # the next item's first, so the reply reads as one text.
            complete = final or any(later.type in STREAMED_KINDS for later in items[position + 1 :])
            windows: list[Window] = []
            text, offset, size = unchecked.text, 0, self.plan.window_chars
            while len(windows) < WINDOWS_A_CHECK and offset < len(text):
                piece = text[offset : offset + size + 1]
                end = window_end(piece, size, final=False)
                if end is None and complete and len(text) - offset <= size:
                    end = len(text) - offset
                if end is None:
                    break
                windows.append(Window(unchecked.start + offset + end, piece[:end]))
                offset += end
            if windows:
                return item, windows
        return None

    def _read(self, item: HeldItem) -> Unchecked:
        """The item's text not checked yet; only what came since the last read is read (a
        long reply a few characters a chunk is many pieces: reading them all again for every
        window would be quadratic)."""
        unchecked = self._unchecked.get(item.id)
        if unchecked is None:
            start = self.ceiling(item)
            unchecked = self._unchecked[item.id] = Unchecked(start=start, seen=start)
        length = item.growing.length
        if length > unchecked.seen:
            unchecked.text += item.growing.tail(length - unchecked.seen)
            unchecked.seen = length
        return unchecked

    async def _check_windows(self, items: Sequence[HeldItem], *, final: bool) -> None:
        while not (self.blocked or self.unchecked):
            batch = self._next_windows(items, final=final)
            if batch is None:
                return
            item, windows = batch
            # Another item's text goes on from this one's as the reply reads: after a blank.
            context = self._before if self._before_item in ("", item.id) else self._before + " "
            reach = max(CONTEXT_CHARS, self.plan.window_chars)
            befores: list[str] = []
            for window in windows:
                befores.append(context)
                context = (context + window.text)[-reach:]
            results = await self.moderator.check_each(
                self.plan.model,
                [
                    Subject(before + (window.text if item.type in STREAMED_KINDS else readable(window.text)))
                    for before, window in zip(befores, windows, strict=True)
                ],
                self.project,
                budget_seconds=self.plan.budget_seconds,
                waiter=self.response_id,
            )
            if isinstance(results, ModerationFailure):
                self.result = merged_side(self.result, results)
                if self.plan.fail_open:
                    self.unchecked = True
                    self.kick()
                else:
                    self.blocked = True
                return
            for index, (window, result) in enumerate(zip(windows, results, strict=True)):
                self.result = merged_side(self.result, result)
                if result.flagged:
                    self.blocked = True
                    break
                self.passed[item.id] = window.end
                self._before, self._before_item = befores[index + 1] if index + 1 < len(befores) else context, item.id
                unchecked = self._unchecked[item.id]
                unchecked.text, unchecked.start = unchecked.text[window.end - unchecked.start :], window.end
            self.kick()
