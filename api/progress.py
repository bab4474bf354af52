"""Pure: a running response's output so far, folded from its event log.

`GET /v1/responses/{id}` of a response still in progress shows what has been streamed up
to now: finished items as they are, the item being written with its text or arguments so
far. A retried inference call streams only beyond what was sent (see the stream
assembler), so folding the log in order never shows text twice.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Item = dict[str, Any]
Event = dict[str, Any]


def _item_added(items: dict[int, Item], event: Event) -> None:
    items[event["output_index"]] = copy.deepcopy(event["item"])


def _item_done(items: dict[int, Item], event: Event) -> None:
    items[event["output_index"]] = event["item"]


def _part_added(items: dict[int, Item], event: Event) -> None:
    content = items[event["output_index"]].setdefault("content", [])
    content[event["content_index"]:event["content_index"] + 1] = [copy.deepcopy(event["part"])]


def _appender(field: str) -> Callable[[dict[int, Item], Event], None]:
    def append(items: dict[int, Item], event: Event) -> None:
        part = items[event["output_index"]]["content"][event["content_index"]]
        part[field] = part.get(field, "") + event["delta"]

    return append


def _arguments_delta(items: dict[int, Item], event: Event) -> None:
    item = items[event["output_index"]]
    item["arguments"] = item.get("arguments", "") + event["delta"]


FOLD: dict[str, Callable[[dict[int, Item], Event], None]] = {
    "response.output_item.added": _item_added,
    "response.output_item.done": _item_done,
    "response.content_part.added": _part_added,
    "response.output_text.delta": _appender("text"),
    "response.refusal.delta": _appender("refusal"),
    "response.function_call_arguments.delta": _arguments_delta,
    "response.mcp_call_arguments.delta": _arguments_delta,
}


def output_so_far(events: list[Event]) -> list[Item]:
    items: dict[int, Item] = {}
    for event in events:
        fold = FOLD.get(event["type"])
        if fold is not None:
            fold(items, event)
    return [items[index] for index in sorted(items)]
