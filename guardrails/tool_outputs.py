"""A hosted tool's output checked before any client can read it, under an `output: block` plan:
a shell command's output, a code call's logs, an MCP server's tool listing and a tool's result
(its error's content too), the results web and file search show. A text that is JSON is read as
the strings it decodes to as well. The tool's activity streams none of it while the tool runs (a shell's deltas wait);
once the tool has answered, its output is checked whole (with the same classifier and budget as
the reply's windows) and, when a check blocks it, the output is withheld: the client never sees
it, and the response ends `incomplete` / `content_filter` without asking the model again
(`workflows/moderation.py`).

A response with no such plan pays nothing: no check, no hold, deltas as they come.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from guardrails.moderator import Moderator, Subject
from guardrails.subjects import readable
from models.moderation import ModerationPlan, ModerationResult, SideResult, blocks


@dataclass(frozen=True)
class ToolVerdict:
    found: SideResult | None = None
    """What the check found (None: nothing was checked, the response holds no output)."""
    blocked: bool = False


class ToolOutputs:
    def __init__(self, moderator: Moderator | None) -> None:
        self.moderator = moderator

    def holds(self, plan: ModerationPlan | None) -> bool:
        """Whether a tool's output waits for its check before it is sent."""
        return plan is not None and plan.holds_output and self.moderator is not None

    async def verdict(
        self, plan: ModerationPlan | None, project: str, response_id: str, texts: Sequence[str]
    ) -> ToolVerdict:
        """The check of what the tool gave back (one subject, its texts together)."""
        if plan is None or self.moderator is None or not self.holds(plan):
            return ToolVerdict()
        subject = Subject("\n".join(readable(text) for text in texts if text))
        if subject.empty:
            return ToolVerdict(ModerationResult.clean(plan.model))
        found = await self.moderator.check(
            plan.model, [subject], project, budget_seconds=plan.budget_seconds, waiter=response_id
        )
        return ToolVerdict(found, blocks(plan.output, found, fail_open=plan.fail_open))
