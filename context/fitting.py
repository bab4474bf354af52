"""What `truncation: "auto"` leaves out of a chat-completions request so it fits the window.

The messages are cut into units that stay whole: a user message; an assistant message with
the tool messages that answer its calls (a call is never sent without its output, nor an
output without its call). System messages (the instructions, developer messages) are never
dropped, nor is the last user message, nor the unit after everything else (the model's
latest step, which the next one continues). The oldest of the rest go first, until the
request fits. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from context.tokens import message_tokens

Message = dict[str, Any]


@dataclass(frozen=True)
class Unit:
    start: int
    """Index of its first message."""
    messages: tuple[Message, ...]
    pinned: bool
    tokens: int


@dataclass(frozen=True)
class Fitted:
    messages: list[Message]
    tokens: int
    """The messages' estimated tokens."""
    dropped: int
    """How many messages were left out."""


def units_of(messages: list[Message]) -> list[Unit]:
    """The messages in whole units, each marked pinned or droppable."""
    groups: list[list[int]] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool" and groups and messages[groups[-1][0]].get("role") == "assistant":
            groups[-1].append(index)  # an output stays with the call it answers
        else:
            groups.append([index])
    last_user = max((index for index, message in enumerate(messages) if message.get("role") == "user"), default=-1)
    units = []
    for position, group in enumerate(groups):
        members = tuple(messages[index] for index in group)
        pinned = members[0].get("role") == "system" or last_user in group or position == len(groups) - 1
        units.append(Unit(group[0], members, pinned, sum(message_tokens(message) for message in members)))
    return units


def fit(messages: list[Message], budget: int) -> Fitted | None:
    """The messages within `budget` tokens, the oldest droppable units left out first; None
    when even the pinned ones do not fit."""
    units = units_of(messages)
    total = sum(unit.tokens for unit in units)
    dropped: set[int] = set()
    for unit in units:
        if total <= budget:
            break
        if not unit.pinned:
            dropped.add(unit.start)
            total -= unit.tokens
    if total > budget:
        return None
    kept = [message for unit in units if unit.start not in dropped for message in unit.messages]
    return Fitted(kept, total, len(messages) - len(kept))
