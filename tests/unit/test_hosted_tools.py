"""A hosted tool is one record (`models/hosted_tools.py`) that every layer reads: each record
has its runner in the workflow, its activity's name, an id prefix no other item has, a
function the model is offered under a unique name, and a call item the model's call becomes
(a forgotten entry in one of the layers' own lists once failed silently)."""

from __future__ import annotations

from activities import chat_format
from activities.stream_assembler import ID_PREFIX, SERVER_RUN_KINDS
from api.preparation import ITEM_ID_PREFIX
from models import activity_names
from models.hosted_tools import HOSTED_ITEM_TYPES, HOSTED_TOOLS
from models.responses import Response
from workflows.catalogue import ToolTable
from workflows.hosted_runners import RUNNERS
from workflows.turn import SERVER_CALLS

REQUIRED = {"file_search": {"vector_store_ids": ["vs_1"]}, "code_interpreter": {"container": "cntr_" + "0" * 32}}
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
        item = chat_format.call_item(table, f"{hosted.function}_2", '{"query": "durable"}')
        assert item.type == hosted.item_type and item.id.startswith(hosted.id_prefix + "_")
        if hosted.name == "code_interpreter":  # its call runs in the tool's container
            assert item.container_id == REQUIRED["code_interpreter"]["container"] and item.code
        if hosted.needs_setup:  # accepted, and not offered, where the server is not set up for it
            assert ToolTable(_tools(request_tool)).chat_tools() == []
