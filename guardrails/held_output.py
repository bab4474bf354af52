"""Streamed output held back until its window's moderation check passed (an `output: block`
policy), between the stream assembler and the event log.

The assembler asks `ceiling(item)` how much of an item's text may be sent; the event log and
every client, a resumed stream and a webhook read only what was sent, so text beyond the
ceiling is seen by no one. After each batch of chunks `offer` starts checking the next complete
window (one check at a time: windows grow while a check runs, so a slow check means fewer,
larger ones); a window that passes raises the item's ceiling and `kick` has the writer send
it. A flagged window blocks: the stream stops, and the turn ends with the text of the windows
that passed. When the backend cannot answer within the plan's budget the turn fails closed
(blocked, the failure recorded), or open when the plan says (the rest is released unchecked).
A call's arguments are checked whole when the reply is complete, before they are sent.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Protocol

from guardrails.moderator import Moderator, Subject
from guardrails.windows import window_end
from models.moderation import (
    UNAVAILABLE,
    ModerationFailure,
    ModerationPlan,
    ModerationResult,
    SideResult,
    merged_side,
)
from models.responses import Response

STREAMED_KINDS = ("message", "reasoning")
"""Items whose text streams as it comes (window by window here); any other's is checked whole."""


class GrowingText(Protocol):
    length: int

    def tail(self, characters: int) -> str: ...


class HeldItem(Protocol):
    id: str
    type: str
    sent: int
    growing: GrowingText


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
        """How much of the item's text may be sent: what passed (text an earlier attempt of the
        turn sent had passed then)."""
        if self.unchecked:
            return item.growing.length
        return max(self.passed.get(item.id, 0), item.sent)

    def offer(self, items: Sequence[HeldItem]) -> None:
        """Text has grown: check the next complete window, unless a check runs."""
        if self.blocked or self.unchecked or (self._checking is not None and not self._checking.done()):
            return
        if self._next_window(items, final=False) is not None:
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

    def _next_window(self, items: Sequence[HeldItem], *, final: bool) -> tuple[HeldItem, int, str] | None:
        for item in items:
            start = self.ceiling(item)
            left = item.growing.length - start
            if left <= 0:
                continue
            if item.type not in STREAMED_KINDS:
                if final:
                    return item, item.growing.length, item.growing.tail(left)
                continue
            text = item.growing.tail(left)
            end = window_end(text, self.plan.window_chars, final=final)
            if end is not None:
                return item, start + end, text[:end]
        return None

    async def _check_windows(self, items: Sequence[HeldItem], *, final: bool) -> None:
        while not (self.blocked or self.unchecked):
            window = self._next_window(items, final=final)
            if window is None:
                return
            item, end, text = window
            result = await self.moderator.check(
                self.plan.model,
                [Subject(text)],
                self.project,
                budget_seconds=self.plan.budget_seconds,
                waiter=self.response_id,
            )
            self.result = merged_side(self.result, result)
            if isinstance(result, ModerationFailure) and result.code == UNAVAILABLE:
                if self.plan.fail_open:
                    self.unchecked = True
                    self.kick()
                else:
                    self.blocked = True
                return
            if isinstance(result, ModerationFailure) or not result.flagged:
                self.passed[item.id] = end
                self.kick()
                continue
            self.blocked = True
