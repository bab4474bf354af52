"""A hosted tool is one record (`models/hosted_tools.py`) that every layer reads: each record
has its runner in the workflow, its activity's name, an id prefix no other item has, a
function the model is offered under a unique name, and a call item the model's call becomes
(a forgotten entry in one of the layers' own lists once failed silently)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from chat_completions import converter
from chat_completions.stream_items import ID_PREFIX, SERVER_RUN_KINDS
from chat_completions.tool_table import ToolTable
from models import activity_names
from models.client_tools import is_client_call
from models.hosted_tools import (
    HOSTED_ITEM_TYPES,
    HOSTED_TOOLS,
    MAX_CODE_CHARS,
    MAX_COMMAND_CHARS,
    MAX_COMMANDS,
    code_of,
    shell_action,
)
from models.responses import Response
from models.search import Source
from response_service.preparation import ITEM_ID_PREFIX
from web_search.citations import citation_annotations
from workflows.hosted_runners import RUNNERS
from workflows.turn import SERVER_CALLS, Finish, RunTools, is_server_call, next_step

CONTAINER = "cntr_" + "0" * 32
REQUIRED = {
    "file_search": {"vector_store_ids": ["vs_1"]},
    "code_interpreter": {"container": CONTAINER},
    "shell": {"environment": {"type": "container_reference", "container_id": CONTAINER}},
}
"""What a request's tool for each must say."""


def _tools(*tools: dict) -> list:
    from models.requests import CreateResponseRequest

    request = CreateResponseRequest.model_validate({"model": "m", "input": "hi", "tools": list(tools)})
    return Response.from_request("resp_x", 1, request).tools


def test_every_hosted_tool_has_a_runner_an_activity_and_a_prefix_of_its_own():
    assert set(RUNNERS) == set(HOSTED_ITEM_TYPES)
    names = {value for key, value in vars(activity_names).items() if key.isupper()}
    prefixes = [hosted.id_prefix for hosted in HOSTED_TOOLS]
    for hosted in HOSTED_TOOLS:
        assert hosted.activity in names, hosted.name
        assert ID_PREFIX[hosted.item_type] == ITEM_ID_PREFIX[hosted.item_type] == hosted.id_prefix
        assert hosted.item_type in SERVER_CALLS and hosted.item_type in SERVER_RUN_KINDS
    others = [prefix for kind, prefix in ITEM_ID_PREFIX.items() if kind not in HOSTED_ITEM_TYPES]
    assert len(set(prefixes)) == len(prefixes) and not set(prefixes) & set(others)


def test_each_is_offered_as_its_function_and_a_call_becomes_its_item():
    for hosted in HOSTED_TOOLS:
        request_tool = {"type": hosted.tool_types[0], **REQUIRED.get(hosted.name, {})}
        clashing = {"type": "function", "name": hosted.function, "parameters": {"type": "object"}}
        table = ToolTable(_tools(request_tool, clashing), set_up=[hosted.name])
        offered = [tool["function"]["name"] for tool in table.chat_tools()]
        assert offered == [hosted.function, f"{hosted.function}_2"], offered  # the client's keeps its name
        item = converter.call_item(table, f"{hosted.function}_2", '{"query": "durable"}')
        assert item.type == hosted.item_type and item.id.startswith(hosted.id_prefix + "_")
        if hosted.name in ("code_interpreter", "shell"):  # its call runs in the tool's container
            assert item.container_id == CONTAINER
        if hosted.needs_setup:  # accepted, and not offered, where the server is not set up for it
            assert ToolTable(_tools(request_tool)).chat_tools() == []


@given(
    st.one_of(
        st.text(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(
                    st.sampled_from(["commands", "timeout_ms", "max_output_length", "code"]), inner, max_size=4
                )
            ),
            max_leaves=12,
        ).map(json.dumps),
    )
)
def test_whatever_a_model_sends_becomes_a_call_within_bounds(arguments: str):
    action = shell_action(arguments)
    assert len(action.commands) <= MAX_COMMANDS + 1 and all(
        len(command) <= MAX_COMMAND_CHARS + 1 for command in action.commands
    )
    assert action.timeout_ms is None or action.timeout_ms > 0
    assert action.max_output_length is None or action.max_output_length > 0
    assert len(code_of(arguments)) <= MAX_CODE_CHARS + 1


def test_a_link_to_a_written_file_is_cited_and_a_sentence_end_is_not_part_of_it():
    written = Source(
        number=0, container_id="cntr_1", file_id="cfile_1", path="/mnt/data/chart.png", filename="chart.png"
    )
    text = "Here: sandbox:/mnt/data/chart.png. And [1] and sandbox:/mnt/data/other.png"
    (citation,) = citation_annotations(text, [written])
    assert citation["type"] == "container_file_citation" and citation["file_id"] == "cfile_1"
    assert text[citation["start_index"] : citation["end_index"]] == "sandbox:/mnt/data/chart.png"


def test_a_shell_in_a_container_is_hosted_and_a_local_one_the_clients():
    here = {"type": "shell", "environment": {"type": "container_reference", "container_id": CONTAINER}}
    for local in ({"type": "shell", "environment": {"type": "local"}}, {"type": "shell"}):
        table = ToolTable(_tools(local, {"type": "apply_patch"}, {"type": "local_shell"}), set_up=["shell"])
        assert [tool["function"]["name"] for tool in table.chat_tools()] == ["shell", "local_shell", "apply_patch"]
        assert not table.hosted and set(table.typed) == {"shell", "local_shell", "apply_patch"}
        call = converter.call_item(table, "shell", '{"commands": ["ls"]}', call_id="call_1")
        assert call.type == "shell_call" and not call.runs_here and call.call_id == "call_1"
        assert not is_server_call(call) and is_client_call(call)
    table = ToolTable(_tools(here), set_up=["shell"])
    assert set(table.hosted) == {"shell"} and not table.typed
    call = converter.call_item(table, "shell", '{"commands": ["ls"]}', call_id="call_1")
    assert call.runs_here and is_server_call(call) and not is_client_call(call)


def test_a_turn_with_a_client_call_ends_the_response_after_the_servers_calls_ran():
    local = ToolTable(_tools({"type": "shell"}))
    client_call = converter.call_item(local, "shell", '{"commands": ["ls"]}', call_id="call_1")
    hosted = ToolTable(_tools({"type": "code_interpreter", "container": CONTAINER}), set_up=["code_interpreter"])
    server_call = converter.call_item(hosted, "code_interpreter", '{"code": "1"}')
    assert isinstance(next_step([client_call], 0, "tool_calls", set(), can_wait=False), Finish)
    step = next_step([server_call, client_call], 0, "tool_calls", set(), can_wait=False)
    assert isinstance(step, RunTools) and step.indexes == (0,)
    ran = server_call.model_copy(update={"status": "completed"})
    assert isinstance(next_step([ran, client_call], 0, "tool_calls", set(), can_wait=False), Finish)
