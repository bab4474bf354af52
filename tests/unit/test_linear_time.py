"""Bounds on work, pure: names cut to a limit stay unique in linear time, a long reply and the
output so far are assembled in linear time, delta events are written as their models would be."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from chat_completions.stream_assembler import StreamAssembler
from chat_completions.tool_table import ToolTable, client_functions, mcp_functions
from models.items import McpListedTool, McpListToolsItem
from models.requests import MAX_CLIENT_FUNCTIONS
from models.tools import McpTool
from tests.support.tools import namespace_of


def fastest(timed: Callable[[int], float], size: int, runs: int = 3) -> float:
    """The fastest of a few runs: what the work costs, without the pauses another process on
    the machine adds to one run (a quadratic cost still shows in every run). Each run is timed
    in this thread's CPU time: on two cores shared with the suite's servers, a run's wall time
    could double while its CPU time does not (200,000 words took 8.7 times 50,000 by the wall
    clock in one CI run)."""
    return min(timed(size) for _ in range(runs))


def test_names_that_cut_to_one_are_made_unique_in_linear_time():
    from models.requests import CreateResponseRequest

    def named(count: int) -> float:
        request = CreateResponseRequest.model_validate({"model": "m", "tools": [namespace_of(count, "t" * 62)]})
        began = time.thread_time()
        functions = client_functions(request.tools)
        took = time.thread_time() - began
        names = [function.chat_name for function in functions]
        assert len(set(names)) == count and all(len(name) <= 64 for name in names)
        return took

    small, large = fastest(named, 256), fastest(named, MAX_CLIENT_FUNCTIONS)
    # Four times the tools: linear takes about four times as long, quadratic sixteen.
    assert large < 10 * small + 0.05, (small, large)


def test_mcp_tools_whose_names_cut_to_one_stay_distinct():
    label = "s" * 60
    tools = [
        McpTool.model_validate(
            {
                "type": "mcp",
                "server_label": f"{label}{index}",
                "server_url": "http://x/mcp",
                "require_approval": "never",
            }
        )
        for index in range(2)
    ]
    listings = {
        tool.server_label: McpListToolsItem(
            id=f"l{index}", server_label=tool.server_label, tools=[McpListedTool(name="same")]
        )
        for index, tool in enumerate(tools)
    }
    functions = mcp_functions(tools, listings)
    assert len({function.function_name for function in functions}) == 2
    table = ToolTable(tools, functions)
    assert {table.mcp[name].server_label for name in table.mcp} == {tool.server_label for tool in tools}


def test_a_long_reply_is_assembled_in_linear_time():
    def assembled(words: int) -> float:
        assembler = StreamAssembler(0)
        began = time.thread_time()
        for _ in range(words):
            assembler.feed({"content": "word "})
        _, output, _ = assembler.finish()
        took = time.thread_time() - began
        assert len(output[0].content[0].text) == 5 * words
        return took

    assembled(1000)  # warm
    small, large = fastest(assembled, 50_000), fastest(assembled, 200_000)
    # Before: 50,000 words 1 s, 200,000 words 28 s. Linear: about four times as long.
    assert large < 8 * small, (small, large)


def test_the_output_so_far_is_folded_in_linear_time():
    from response_service.progress import output_so_far

    def folded(deltas: int) -> float:
        events = [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "message", "id": "msg_1", "content": []},
            },
            {
                "type": "response.content_part.added",
                "output_index": 0,
                "content_index": 0,
                "part": {"type": "output_text", "text": ""},
            },
        ]
        events += [
            {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "word "}
            for _ in range(deltas)
        ]
        began = time.thread_time()
        [message] = output_so_far(events)
        took = time.thread_time() - began
        assert message["content"][0]["text"] == "word " * deltas
        return took

    folded(1000)
    small, large = fastest(folded, 50_000), fastest(folded, 200_000)
    assert large < 8 * small, (small, large)


def test_a_delta_event_is_written_as_its_model_would_be():
    from models.events import TextDeltaEvent
    from models.responses import WIRE

    for event in (
        TextDeltaEvent(item_id="msg_1", output_index=2, content_index=0, delta="hé\u2028"),
        TextDeltaEvent(
            type="response.reasoning_text.delta",
            item_id="rs_1",
            output_index=0,
            content_index=0,
            delta="x",
            logprobs=[{"token": "x", "logprob": -0.1}],
        ),
    ):
        assert json.dumps(event.wire()) == json.dumps(event.model_dump(mode="json", by_alias=True, context=WIRE))
