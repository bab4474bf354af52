"""What a turn's earlier attempts already streamed, read back from its event log: a retried
inference call (`chat_completions/stream_assembler.py`) keeps the indexes, ids and text clients
have seen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Streamed:
    """What earlier attempts streamed at one output index."""

    type: str
    id: str
    call_id: str | None = None
    name: str | None = None
    server_label: str = ""
    namespace: str | None = None
    text: str = ""
    part_added: bool = False
    done: bool = False


def streamed_from_events(events: list[dict[str, Any]]) -> dict[int, Streamed]:
    streamed: dict[int, Streamed] = {}
    pieces: dict[int, list[str]] = {}
    for event in events:
        index = event.get("output_index")
        if index is None:
            continue
        match event["type"]:
            case "response.output_item.added":
                item = event["item"]
                streamed[index] = Streamed(
                    type=item["type"],
                    id=item["id"],
                    call_id=item.get("call_id"),
                    name=item.get("name"),
                    server_label=item.get("server_label", ""),
                    namespace=item.get("namespace"),
                )
            case "response.content_part.added" if index in streamed:
                streamed[index].part_added = True
            case (
                "response.output_text.delta"
                | "response.reasoning_text.delta"
                | "response.function_call_arguments.delta"
                | "response.mcp_call_arguments.delta"
                | "response.custom_tool_call_input.delta"
            ) if index in streamed:
                pieces.setdefault(index, []).append(event["delta"])
            case "response.output_item.done" if index in streamed:
                streamed[index].done = True
    for index, parts in pieces.items():
        streamed[index].text = "".join(parts)
    return streamed
