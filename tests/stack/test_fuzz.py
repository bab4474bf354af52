"""Property: whatever a client sends, a running `durable-responses dev` never answers 500;
every request it accepts reaches a terminal status in bounded time; every one it refuses
leaves no row and starts no workflow.

Hypothesis generates request bodies of the right shape with hostile values: lone
surrogates, NULs, control characters, deep nesting, huge numbers and strings, wrong types.
CI runs `FUZZ_EXAMPLES` of them (default 150); a longer run by hand:

    FUZZ_EXAMPLES=3000 pytest tests/stack/test_fuzz.py -s
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types import ModerationCreateResponse
from temporalio.client import Client

from tests.support.dev_stack import DevStack
from tests.support.scripted_backend import ScriptedBackend

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
TERMINAL = {"completed", "failed", "incomplete", "cancelled"}
TERMINAL_EVENTS = {"response.completed", "response.failed", "response.incomplete", "response.cancelled", "error"}
ACCEPTED_WITHIN_SECONDS = 60

# ---- hostile values -----------------------------------------------------------------------

surrogates = st.characters(categories=["Cs"])
hostile_characters = st.one_of(st.characters(), surrogates, st.sampled_from("\x00\r\n\t\x7f\u2028\ufeff"))
hostile_text = st.one_of(
    st.text(hostile_characters, max_size=40),
    st.sampled_from(["", "\x00", "\udfff", "a\ud800b", "line\r\nInjected: 1", "%00", "../../etc/passwd"]),
    st.integers(10_000, 3_000_000).map(lambda size: "x" * size),
)
huge_numbers = st.one_of(
    st.integers(-(2**80), 2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(10**23),
    st.just(-1),
    st.just(0),
)
wrong_types = st.one_of(
    st.none(),
    st.booleans(),
    huge_numbers,
    hostile_text,
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def nested(depth: int) -> Any:
    value: Any = {"type": "string"}
    for _ in range(depth):
        value = {"type": "object", "properties": {"a": value}}
    return value


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), huge_numbers, hostile_text),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(hostile_text, children, max_size=3),
    max_leaves=12,
)
schemas = st.one_of(st.just({"type": "object"}), st.integers(1, 300).map(nested), json_values)

content_parts = st.one_of(
    st.fixed_dictionaries({"type": st.just("input_text"), "text": hostile_text}),
    st.fixed_dictionaries({"type": st.just("input_image"), "image_url": hostile_text}),
    st.fixed_dictionaries({"type": hostile_text, "text": hostile_text}),
)
input_items = st.one_of(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "system", "developer", "assistant", "x"]),
            "content": st.one_of(hostile_text, st.lists(content_parts, max_size=3)),
        }
    ),
    st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": hostile_text, "output": hostile_text}),
    st.fixed_dictionaries({"type": st.just("item_reference"), "id": hostile_text}),
    st.fixed_dictionaries(
        {"type": st.just("mcp_approval_response"), "approval_request_id": hostile_text, "approve": wrong_types}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("compaction"),
            "encrypted_content": st.one_of(hostile_text, st.just("plain.eyJzdW1tYXJ5IjogMX0"), st.just("dr1.k.forged")),
        }
    ),
    st.fixed_dictionaries({"type": st.just("compaction_trigger")}, optional={"id": hostile_text}),
    json_values,
)
context_management = st.one_of(
    st.lists(
        st.fixed_dictionaries(
            {"type": st.one_of(st.just("compaction"), hostile_text)}, optional={"compact_threshold": huge_numbers}
        ),
        max_size=2,
    ),
    json_values,
)
function_tools = st.fixed_dictionaries(
    {"type": st.just("function"), "name": st.one_of(st.just("f"), hostile_text)},
    optional={"parameters": schemas, "description": hostile_text, "strict": wrong_types},
)
mcp_tools = st.fixed_dictionaries(
    {
        "type": st.just("mcp"),
        "server_label": st.one_of(st.just("s"), hostile_text),
        "server_url": st.one_of(
            st.just("http://127.0.0.1:1/mcp"),
            st.just("http://user:pw@127.0.0.1:1/mcp"),
            st.just("file:///etc/passwd"),
            hostile_text,
        ),
    },
    optional={
        "headers": st.dictionaries(hostile_text, hostile_text, max_size=2),
        "authorization": hostile_text,
        "require_approval": st.one_of(st.sampled_from(["always", "never"]), wrong_types),
    },
)
web_search_tools = st.fixed_dictionaries(
    {"type": st.sampled_from(["web_search", "web_search_preview"])},
    optional={
        "filters": st.one_of(
            st.fixed_dictionaries({"allowed_domains": st.lists(hostile_text, max_size=3)}), json_values
        ),
        "search_context_size": st.one_of(st.sampled_from(["low", "medium", "high"]), wrong_types),
        "user_location": st.one_of(
            st.fixed_dictionaries({"type": st.just("approximate"), "country": hostile_text}), json_values
        ),
    },
)
container_options = st.fixed_dictionaries(
    {},
    optional={
        "memory_limit": st.one_of(st.sampled_from(["1g", "4g", "64g", "2g"]), wrong_types),
        "file_ids": st.one_of(st.lists(hostile_text, max_size=2), wrong_types),
        "network_policy": st.one_of(
            st.fixed_dictionaries(
                {"type": st.sampled_from(["disabled", "allowlist"])},
                optional={"allowed_domains": st.lists(hostile_text, max_size=2)},
            ),
            json_values,
        ),
    },
)
code_tools = st.fixed_dictionaries(
    {
        "type": st.just("code_interpreter"),
        "container": st.one_of(
            st.just("auto"),
            container_options.map(lambda options: {"type": "auto"} | options),
            hostile_text,
            json_values,
        ),
    }
)
shell_tools = st.fixed_dictionaries(
    {"type": st.just("shell")},
    optional={
        "environment": st.one_of(
            container_options.map(lambda options: {"type": "container_auto"} | options),
            st.fixed_dictionaries({"type": st.just("container_reference"), "container_id": hostile_text}),
            st.just({"type": "local"}),
            json_values,
        )
    },
)
moderation_modes = st.one_of(st.sampled_from(["score", "block"]), wrong_types)
moderation_settings = st.one_of(
    st.fixed_dictionaries(
        {"model": st.one_of(st.just("omni-moderation-latest"), hostile_text)},
        optional={
            "policy": st.one_of(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "input": st.fixed_dictionaries({"mode": moderation_modes}),
                        "output": st.fixed_dictionaries({"mode": moderation_modes}),
                    },
                ),
                json_values,
            )
        },
    ),
    json_values,
)
hostile_bodies = st.fixed_dictionaries(
    {
        "model": st.one_of(st.just("echo"), hostile_text),
        "input": st.one_of(hostile_text, st.lists(input_items, max_size=3)),
    },
    optional={
        "instructions": st.one_of(hostile_text, wrong_types),
        "metadata": st.one_of(st.dictionaries(hostile_text, hostile_text, max_size=4), wrong_types),
        "user": hostile_text,
        "temperature": huge_numbers,
        "top_p": huge_numbers,
        "max_output_tokens": huge_numbers,
        "top_logprobs": huge_numbers,
        "max_tool_calls": huge_numbers,
        "stream": wrong_types,
        "background": wrong_types,
        "store": wrong_types,
        "parallel_tool_calls": wrong_types,
        "tools": st.lists(
            st.one_of(function_tools, mcp_tools, web_search_tools, code_tools, shell_tools, json_values), max_size=2
        ),
        "tool_choice": st.one_of(st.sampled_from(["auto", "none", "required"]), json_values),
        "text": json_values,
        "reasoning": json_values,
        "include": st.lists(hostile_text, max_size=2),
        "previous_response_id": hostile_text,
        "conversation": st.one_of(hostile_text, json_values),
        "truncation": st.one_of(st.sampled_from(["auto", "disabled"]), wrong_types),
        "context_management": context_management,
        "service_tier": wrong_types,
        "prompt_cache_key": hostile_text,
        "moderation": moderation_settings,
        "safety_identifier": st.one_of(hostile_text, wrong_types),
    },
)

# Bodies a server must accept, with values at the edges of legal: any text but NUL and lone
# surrogates, big strings, all the flags, function tools with deep (allowed) schemas.
legal_text = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=60),
    st.integers(10_000, 1_000_000).map(lambda size: "é" * size),
)
legal_bodies = st.fixed_dictionaries(
    {
        "model": st.just("echo"),
        "input": st.one_of(
            legal_text.filter(bool),
            st.lists(
                st.fixed_dictionaries(
                    {"role": st.sampled_from(["user", "system", "developer"]), "content": legal_text.filter(bool)}
                ),
                min_size=1,
                max_size=3,
            ),
        ),
    },
    optional={
        "instructions": legal_text,
        "metadata": st.dictionaries(
            st.text(st.characters(codec="ascii", exclude_characters="\x00"), min_size=1, max_size=64),
            legal_text.map(lambda text: text[:512]),
            max_size=16,
        ),
        "temperature": st.floats(0, 2),
        "top_p": st.floats(0, 1),
        "max_output_tokens": st.integers(16, 1_000_000),
        "stream": st.booleans(),
        "background": st.booleans(),
        "parallel_tool_calls": st.booleans(),
        "tools": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.just("function"),
                    "name": st.sampled_from(["f", "g"]),
                    "parameters": st.integers(1, 30).map(nested),
                    "description": legal_text,
                }
            ),
            max_size=2,
            unique_by=lambda t: t["name"],
        ),
        "user": legal_text.map(lambda text: text[:64]),
        "truncation": st.sampled_from(["auto", "disabled"]),
        "moderation": st.fixed_dictionaries(
            {"model": st.just("omni-moderation-latest")},
            optional={
                "policy": st.fixed_dictionaries(
                    {},
                    optional={
                        "input": st.fixed_dictionaries({"mode": st.sampled_from(["score", "block"])}),
                        "output": st.fixed_dictionaries({"mode": st.sampled_from(["score", "block"])}),
                    },
                )
            },
        ),
        "context_management": st.lists(
            st.fixed_dictionaries(
                {"type": st.just("compaction")}, optional={"compact_threshold": st.integers(1, 2**31 - 1)}
            ),
            max_size=1,
        ),
    },
).map(lambda body: body if not body.get("background") else body | {"store": True})
request_bodies = st.one_of(hostile_bodies, legal_bodies)


def as_json(body: dict[str, Any]) -> bytes:
    """Python's encoder, as a client would use it: surrogates as escapes, NaN as `NaN`."""
    return json.dumps(body, ensure_ascii=True).encode()


# ---- the stack ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory, backend: ScriptedBackend):
    stack = DevStack(
        tmp_path_factory.mktemp("fuzz") / "data",
        backend,
        env={"MCP_MAX_ATTEMPTS": "1", "MCP_LIST_TIMEOUT_SECONDS": "5"},
    )
    stack.start()
    yield stack
    assert stack.stop() == 0, "dev did not stop cleanly after the fuzzing"


def stored_rows(dev: DevStack) -> int:
    """Responses and containers (a code tool's `"auto"` makes one only for a request kept)."""
    database = sqlite3.connect(f"file:{dev.data_dir / 'responses.db'}?mode=ro", uri=True)
    try:
        return sum(
            database.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in ("responses", "containers")
        )
    finally:
        database.close()


def fuzz_settings(examples: int) -> Any:
    """Hypothesis as every fuzz test here runs it: no deadline, nothing kept between runs, the
    same examples in CI."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=os.environ.get("CI") is not None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


def until_terminal(http: httpx.Client, response_id: str) -> str:
    deadline = time.monotonic() + ACCEPTED_WITHIN_SECONDS
    while True:
        status = http.get(f"/v1/responses/{response_id}").json()["status"]
        if status in TERMINAL:
            return status
        assert time.monotonic() < deadline, f"accepted response {response_id} is still {status}"
        time.sleep(0.05)


def read_stream(answer: httpx.Response) -> tuple[str | None, str]:
    """The response id and the type of the stream's last event."""
    response_id, last = None, ""
    for line in answer.iter_lines():
        if line.startswith("event:"):
            last = line.removeprefix("event:").strip()
        elif line.startswith("data:") and response_id is None:
            response_id = (json.loads(line[5:]).get("response") or {}).get("id")
    return response_id, last


async def workflow_count(dev: DevStack) -> int:
    client = await Client.connect(f"127.0.0.1:{dev.temporal_port}")
    return (await client.count_workflows()).count


def test_no_request_breaks_the_server(dev: DevStack):
    outcomes: Counter[str] = Counter()
    accepted: list[str] = []

    @fuzz_settings(EXAMPLES)
    @given(body=request_bodies)
    def one_request(body: dict[str, Any]) -> None:
        rows_before = stored_rows(dev)
        with httpx.Client(base_url=dev.url, timeout=ACCEPTED_WITHIN_SECONDS) as http:
            with http.stream(
                "POST", "/v1/responses", content=as_json(body), headers={"content-type": "application/json"}
            ) as answer:
                assert answer.status_code < 500, (answer.status_code, answer.read()[:500], body)
                kind = answer.headers.get("content-type", "")
                if answer.status_code != 200:
                    error = json.loads(answer.read())["error"]
                    assert set(error) == {"message", "type", "param", "code"}, error
                    outcomes[f"{answer.status_code} {error['code']}"] += 1
                    assert stored_rows(dev) == rows_before, f"a refused request left a row: {error}"
                    return
                if kind.startswith("text/event-stream"):
                    response_id, last = read_stream(answer)
                    assert last in TERMINAL_EVENTS, f"the stream of {response_id} ended with {last!r}"
                    outcomes[f"200 stream {last}"] += 1
                else:
                    created = json.loads(answer.read())
                    response_id, status = created["id"], created["status"]
                    if status not in TERMINAL:
                        status = until_terminal(http, response_id)
                    outcomes[f"200 {status}"] += 1
            assert response_id
            accepted.append(response_id)

    one_request()
    print(f"\n{EXAMPLES} examples: " + ", ".join(f"{name}: {count}" for name, count in outcomes.most_common()))
    assert len(accepted) >= 1, "no generated request was accepted: the strategy tests only refusals"
    # Refused requests started no workflow: the dev server ran exactly the accepted ones
    # (Temporal's visibility catches up within a moment).
    deadline = time.monotonic() + 15
    while (started := asyncio.run(workflow_count(dev))) < len(accepted) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert started == len(accepted)
    assert Path(dev.log).read_text().count("Traceback") == 0, "the server logged a traceback"


moderation_parts = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": hostile_text}),
    st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries({"url": hostile_text})}),
    json_values,
)
moderation_bodies = st.fixed_dictionaries(
    {
        "input": st.one_of(
            hostile_text, st.lists(hostile_text, max_size=40), st.lists(moderation_parts, max_size=4), wrong_types
        )
    },
    optional={"model": st.one_of(st.sampled_from(["omni-moderation-latest", "text-moderation-stable"]), hostile_text)},
)


def test_no_moderation_request_breaks_the_server(dev: DevStack):
    """`/v1/moderations` with hostile bodies: a refusal in OpenAI's shape or a result list
    the strict SDK reads, never a 500, and no row."""
    outcomes: Counter[str] = Counter()

    @fuzz_settings(max(EXAMPLES // 3, 20))
    @given(body=moderation_bodies)
    def one_request(body: dict[str, Any]) -> None:
        rows_before = stored_rows(dev)
        with httpx.Client(base_url=dev.url, timeout=ACCEPTED_WITHIN_SECONDS) as http:
            answer = http.post("/v1/moderations", content=as_json(body), headers={"content-type": "application/json"})
        assert answer.status_code < 500, (answer.status_code, answer.text[:500], body)
        if answer.status_code != 200:
            error = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}, error
            outcomes[f"{answer.status_code} {error['code']}"] += 1
        else:
            ModerationCreateResponse.model_validate(answer.json(), strict=False)
            outcomes["200"] += 1
        assert stored_rows(dev) == rows_before

    one_request()
    print("\n" + ", ".join(f"{name}: {count}" for name, count in outcomes.most_common()))
    assert outcomes["200"], "no generated request was answered"
    assert Path(dev.log).read_text().count("Traceback") == 0, "the server logged a traceback"


CONTEXT_PATHS = ("/v1/responses/compact", "/v1/responses/input_tokens")


def test_no_compact_or_count_request_breaks_the_server(dev: DevStack):
    """The same bodies to `/v1/responses/compact` and `/v1/responses/input_tokens`: never a
    500, a refusal in OpenAI's shape that leaves no row, an answer of the documented object."""
    outcomes: Counter[str] = Counter()

    @fuzz_settings(max(EXAMPLES // 3, 20))
    @given(body=request_bodies, path=st.sampled_from(CONTEXT_PATHS))
    def one_request(body: dict[str, Any], path: str) -> None:
        rows_before = stored_rows(dev)
        with httpx.Client(base_url=dev.url, timeout=ACCEPTED_WITHIN_SECONDS) as http:
            answer = http.post(path, content=as_json(body), headers={"content-type": "application/json"})
        assert answer.status_code < 500, (answer.status_code, answer.text[:500], body)
        if answer.status_code != 200:
            error = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"}, error
            outcomes[f"{path} {answer.status_code} {error['code']}"] += 1
        else:
            kind = answer.json()["object"]
            assert kind == ("response.compaction" if path.endswith("compact") else "response.input_tokens")
            outcomes[f"{path} 200"] += 1
        assert stored_rows(dev) == rows_before, "a compaction or a count left a response behind"

    one_request()
    print("\n" + ", ".join(f"{name}: {count}" for name, count in outcomes.most_common()))
    assert any(name.endswith(" 200") for name in outcomes), "no generated request was answered"
    assert Path(dev.log).read_text().count("Traceback") == 0, "the server logged a traceback"


def test_no_websocket_message_breaks_the_connection(dev: DevStack):
    """The same bodies as `response.create` messages on one WebSocket connection (with the
    mode's own fields): each is refused with an `error` event in OpenAI's shape that leaves no
    row, or streams to a terminal event; the connection stays open through all of them."""
    from websockets.sync.client import connect

    outcomes: Counter[str] = Counter()
    envelope = st.fixed_dictionaries(
        {},
        optional={
            "stream_id": st.one_of(st.text(max_size=130), st.integers(), st.none()),
            "generate": st.one_of(st.booleans(), st.text(max_size=3)),
            "background": st.booleans(),
        },
    )
    with connect(f"ws://127.0.0.1:{dev.port}/v1/responses", max_size=None, open_timeout=30) as socket:

        @fuzz_settings(max(EXAMPLES // 3, 20))
        @given(body=request_bodies, extra=envelope)
        def one_message(body: dict[str, Any], extra: dict[str, Any]) -> None:
            rows_before = stored_rows(dev)
            message = {**body, **extra, "type": "response.create"}
            message.pop("stream", None)
            socket.send(as_json(message).decode())
            while True:
                event = json.loads(socket.recv(timeout=ACCEPTED_WITHIN_SECONDS))
                if event["type"] == "error" and "status" in event:  # refused (a stream's own has none)
                    assert event["status"] < 500, event
                    assert set(event["error"]) >= {"message", "type", "param", "code"}, event
                    assert stored_rows(dev) == rows_before, f"a refused message left a row: {event}"
                    outcomes[f"error {event['status']} {event['error']['code']}"] += 1
                    return
                if event["type"] in TERMINAL_EVENTS:
                    outcomes[f"streamed {event['type']}"] += 1
                    return

        one_message()
    print("\nWebSocket: " + ", ".join(f"{name}: {count}" for name, count in outcomes.most_common()))
    assert Path(dev.log).read_text().count("Traceback") == 0, "the server logged a traceback"
