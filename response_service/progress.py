"""Pure: a running response's output so far, folded from its event log.

`GET /v1/responses/{id}` of a response still in progress shows what has been streamed up
to now: finished items as they are, the item being written with its text or arguments so
far. A retried inference call streams only beyond what was sent (see the stream
assembler), so folding the log in order never shows text twice.

Folding is linear in the events: deltas gather as pieces and are joined once, when the
output is asked for. A client that polls a long reply would otherwise pay for the whole text
once per delta (100,000 deltas: seconds per poll). `OutputFolds` keeps each running
response's fold between polls, so a poll reads only the events written since the last one.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from typing import Any

Item = dict[str, Any]
Event = dict[str, Any]
Place = tuple[int, int | None, str]
"""(output index, content index or None for a call's arguments, field)."""

DELTAS: dict[str, tuple[bool, str]] = {
    "response.output_text.delta": (True, "text"),
    "response.refusal.delta": (True, "refusal"),
    "response.function_call_arguments.delta": (False, "arguments"),
    "response.mcp_call_arguments.delta": (False, "arguments"),
}
"""Delta event type -> (whether it goes into a content part, the field it extends)."""


class OutputFold:
    """The output a log's events add up to, event by event."""

    def __init__(self) -> None:
        self.items: dict[int, Item] = {}
        self.pieces: dict[Place, list[str]] = {}
        self.last_sequence = -1

    def apply(self, events: list[Event]) -> None:
        for event in events:
            sequence = event.get("sequence_number")
            if sequence is not None:
                if sequence <= self.last_sequence:
                    continue  # two polls at once read the same events: each is folded once
                self.last_sequence = sequence
            kind, index = event["type"], event.get("output_index")
            if not isinstance(index, int):
                continue  # each event folded here is of an output item
            if kind == "response.output_item.added":
                self._forget(index)
                self.items[index] = copy.deepcopy(event["item"])
            elif kind == "response.output_item.done":
                self._forget(index)
                self.items[index] = event["item"]
            elif kind == "response.content_part.added":
                self._settle(index)
                content = self.items[index].setdefault("content", [])
                at = event["content_index"]
                content[at : at + 1] = [copy.deepcopy(event["part"])]
                self.pieces.pop((index, at, "text"), None)
                self.pieces.pop((index, at, "refusal"), None)
            elif kind in DELTAS and index in self.items:
                in_part, field = DELTAS[kind]
                place = (index, event["content_index"] if in_part else None, field)
                self.pieces.setdefault(place, []).append(event["delta"])

    def output(self) -> list[Item]:
        for index in list(self.items):
            self._settle(index)
        return [self.items[index] for index in sorted(self.items)]

    def _forget(self, index: int) -> None:
        for place in [place for place in self.pieces if place[0] == index]:
            del self.pieces[place]

    def _settle(self, index: int) -> None:
        """Join the pieces gathered for an item into its fields."""
        for place in [place for place in self.pieces if place[0] == index]:
            _, content_index, field = place
            joined = "".join(self.pieces.pop(place))
            target = self.items[index] if content_index is None else self.items[index]["content"][content_index]
            target[field] = target.get(field, "") + joined


def output_so_far(events: list[Event]) -> list[Item]:
    fold = OutputFold()
    fold.apply(events)
    return fold.output()


class OutputFolds:
    """The folds of the running responses this process was asked about lately (LRU)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._folds: OrderedDict[tuple[str, int], OutputFold] = OrderedDict()

    def of(self, response_id: str, from_output_index: int) -> OutputFold:
        """The fold of a response's items from an output index on (a new one after the
        response's stored output has grown: its earlier items are stored whole then)."""
        key = (response_id, from_output_index)
        fold = self._folds.pop(key, None) or OutputFold()
        self._folds[key] = fold
        while len(self._folds) > self.size:
            self._folds.popitem(last=False)
        return fold

    def forget(self, response_id: str) -> None:
        for key in [key for key in self._folds if key[0] == response_id]:
            del self._folds[key]
