"""A newcomer's first five minutes: `durable-responses dev` with nothing configured answers
with the built-in demo model, says so, and shows what makes the server special (streaming,
tool calls, approvals through the demo MCP tools, surviving a Ctrl-C and a restart)."""

from __future__ import annotations

import datetime
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import httpx
import pytest
from pydantic import BaseModel, Field

from tests.support.dev_stack import DevStack
from tests.support.documents import ASTRONOMY_LINES, BAKING, GARDENING, pdf_with_text
from tests.support.processes import CLI
from tests.support.sandboxes import needs_bubblewrap


@pytest.fixture(scope="module")
def demo_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevStack]:
    stack = DevStack(tmp_path_factory.mktemp("newcomer") / "data", backend=None)
    stack.start()
    yield stack
    stack.close()


def test_dev_with_no_backend_says_it_answers_with_the_demo_model(demo_dev: DevStack):
    log = demo_dev.log.read_text()
    assert "inference backend: the built-in demo model (demo/echo)" in log
    assert "DEMO MODEL" in log and f"{demo_dev.url}/demo/mcp" in log
    assert "no API keys exist: anyone who can reach 127.0.0.1 may use this server" in log
    response = demo_dev.sdk().responses.create(model="gpt-4o-mini", input="Say hello in one sentence.")
    assert response.status == "completed"
    assert response.model == "demo/echo", "a response must not pretend a real model wrote it"
    assert response.output_text == "You said: Say hello in one sentence."
    assert response.usage is not None and response.usage.output_tokens == 7  # a word is a token


def test_the_readmes_first_snippet_streams_a_demo_answer(demo_dev: DevStack):
    """The quick start's snippet, as written, against `dev` with nothing configured."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1]
    snippet = quick_start.split("```python\n", 1)[1].split("```", 1)[0]
    assert "http://127.0.0.1:8000/v1" in snippet
    snippet = snippet.replace("http://127.0.0.1:8000/v1", f"{demo_dev.url}/v1")
    ran = subprocess.run(
        [sys.executable, "-c", snippet],
        capture_output=True,
        text=True,
        timeout=60,
        env={name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")},
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "You said: Hello, durable world!\ndemo/echo You said: Another one?\n"


def test_the_demo_streams_word_by_word(demo_dev: DevStack):
    deltas, arrived = [], []
    with demo_dev.sdk().responses.stream(model="demo/echo", input="durable streams are the point") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
                arrived.append(time.monotonic())
        final = stream.get_final_response()
    assert deltas == ["You ", "said: ", "durable ", "streams ", "are ", "the ", "point"]
    assert final.output_text == "".join(deltas) and final.status == "completed"
    assert arrived[-1] - arrived[0] > 0.1, "the words must arrive over time, as a model streams them"


def test_the_demo_calls_a_function_tool_it_is_asked_for(demo_dev: DevStack):
    client = demo_dev.sdk()
    weather = {
        "type": "function",
        "name": "weather",
        "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
    asked = client.responses.create(model="demo/echo", input="What is the weather in 'Paris'?", tools=[weather])
    call = asked.output[0]
    assert call.type == "function_call" and call.name == "weather" and call.arguments == '{"city":"Paris"}'
    answered = client.responses.create(
        model="demo/echo",
        previous_response_id=asked.id,
        tools=[weather],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21 C"}],
    )
    assert answered.output_text == "The tool weather answered: sunny, 21 C."


class Event(BaseModel):
    name: str
    day: datetime.date
    attendees: list[str]
    kind: Literal["talk", "party"]
    place: Place | None


class Place(BaseModel):
    city: str
    capacity: int = Field(ge=10)


def test_the_demo_answers_a_schema_with_json_that_fits_it(demo_dev: DevStack):
    """`responses.parse` works against the demo with nothing configured (issue 41)."""
    client = demo_dev.sdk()
    parsed = client.responses.parse(model="demo/echo", input="Plan a party", text_format=Event)
    assert isinstance(parsed.output_parsed, Event) and parsed.output_parsed.kind == "talk"
    assert parsed.output_parsed.place is not None and parsed.output_parsed.place.capacity >= 10
    loose = client.responses.create(model="demo/echo", input="hi", text={"format": {"type": "json_object"}})
    assert json.loads(loose.output_text) == {"you_said": "hi"}


def test_an_approval_through_the_demo_tools_waits_for_the_cli(demo_dev: DevStack):
    client = demo_dev.sdk()
    tools = [
        {"type": "mcp", "server_label": "demo", "server_url": f"{demo_dev.url}/demo/mcp", "require_approval": "always"}
    ]
    waiting = client.responses.create(model="demo/echo", input="roll dice with 20 sides", tools=tools, background=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        waiting = client.responses.retrieve(waiting.id)
        if waiting.output and waiting.output[-1].type == "mcp_approval_request":
            break
        time.sleep(0.1)
    request = waiting.output[-1]
    assert request.type == "mcp_approval_request" and request.name == "roll_dice"
    assert request.arguments == '{"sides":20}'
    approved = subprocess.run(
        [CLI, "approve", waiting.id, request.id, "--api-url", demo_dev.url], capture_output=True, text=True, timeout=60
    )
    assert approved.returncode == 0, approved.stderr
    deadline = time.monotonic() + 30
    while client.responses.retrieve(waiting.id).status == "in_progress" and time.monotonic() < deadline:
        time.sleep(0.1)
    ended = client.responses.retrieve(waiting.id)
    assert ended.status == "completed", ended.error
    assert ended.output_text.startswith("The tool roll_dice answered: rolled a ")
    assert ended.output_text.endswith(" on a 20-sided die.")


def test_the_readmes_file_search_snippet_runs_as_written(demo_dev: DevStack):
    """The README's second snippet (it goes on from the first) against `dev`."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    first = readme.split("## Quick start", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    second = readme.split("### Search your own documents", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    snippet = (first + second).replace("http://127.0.0.1:8000/v1", f"{demo_dev.url}/v1")
    ran = subprocess.run(
        [sys.executable, "-c", snippet],
        capture_output=True,
        text=True,
        timeout=120,
        env={name: value for name, value in os.environ.items() if not name.startswith("OPENAI_")},
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[-2] == "tomatoes.md"
    assert lines[-1].startswith("I searched your files and found: tomatoes.md [1]")


def test_the_readmes_file_search_example_runs_against_dev(demo_dev: DevStack):
    """The README's worked example: three documents into a vector store, a search that ranks
    the right one first, and a response whose (demo) model calls `file_search` and cites it."""
    client = demo_dev.sdk()
    documents = [
        ("tomatoes.md", GARDENING.encode()),
        ("bread.html", BAKING.encode()),
        ("andromeda.pdf", pdf_with_text(ASTRONOMY_LINES)),
    ]
    file_ids = [client.files.create(file=document, purpose="assistants").id for document in documents]
    store = client.vector_stores.create(name="notes", file_ids=file_ids)
    deadline = time.monotonic() + 60
    while store.status != "completed" and time.monotonic() < deadline:
        time.sleep(0.2)
        store = client.vector_stores.retrieve(store.id)
    assert store.status == "completed" and store.file_counts.completed == 3
    found = client.vector_stores.search(store.id, query="How far away is Andromeda?")
    assert found.data[0].filename == "andromeda.pdf"
    response = client.responses.create(
        model="demo/echo",
        input="Use file search: watering tomatoes",
        tools=[{"type": "file_search", "vector_store_ids": [store.id]}],
        include=["file_search_call.results"],
    )
    call, message = response.output
    assert call.type == "file_search_call" and call.status == "completed"
    assert call.results[0].filename == "tomatoes.md" and "twice a week" in call.results[0].text
    assert message.content[0].text.startswith("I searched your files and found: tomatoes.md [1]")
    assert message.content[0].annotations[0].type == "file_citation"
    assert message.content[0].annotations[0].filename == "tomatoes.md"


def test_an_unknown_demo_model_fails_at_once_naming_the_ones_there_are(demo_dev: DevStack):
    response = demo_dev.sdk().responses.create(model="demo/nope", input="hi")
    assert response.status == "failed" and response.error is not None
    assert "'demo/nope' does not exist" in response.error.message and "demo/slow" in response.error.message


def test_a_flaky_demo_answer_is_retried_and_streams_every_word_once(demo_dev: DevStack):
    """`demo/flaky` breaks its first attempt halfway; the client sees one unbroken answer."""
    words = "alpha beta gamma delta epsilon zeta eta theta"
    deltas = []
    with demo_dev.sdk().responses.stream(model="demo/flaky", input=words) as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text == f"You said: {words}"
    assert "".join(deltas) == final.output_text


def test_a_slow_demo_answer_survives_ctrl_c_and_a_restart(tmp_path: Path):
    """Ctrl-C says what it waits for; a request still waiting is told where its response
    will be (a 503 the SDK does not retry); after a restart both responses end whole."""
    dev = DevStack(tmp_path / "data", backend=None, env={"SHUTDOWN_GRACE_SECONDS": "1"})
    dev.start()
    try:
        running = dev.sdk().responses.create(model="demo/slow", input="one two three", background=True)
        answers: list[httpx.Response] = []
        waiting = threading.Thread(
            target=lambda: answers.append(
                httpx.post(f"{dev.url}/v1/responses", json={"model": "demo/slow", "input": "four five"}, timeout=60)
            )
        )
        waiting.start()
        time.sleep(1.5)
        assert dev.stop(signal.SIGINT) == 0
        waiting.join(30)
        log = dev.log.read_text()
        line = next(line for line in log.splitlines() if line.startswith("stopping:"))
        assert line.startswith("stopping: waiting up to 1 s for 1 open request to finish; 2 model calls still ")
        assert "exiting within 11 s (press Ctrl-C again to stop now)" in line
        answer = answers[0]
        assert answer.status_code == 503 and answer.headers["x-should-retry"] == "false"
        error = answer.json()["error"]
        assert error["code"] == "server_stopping"
        cut_short = error["message"].split("GET /v1/responses/")[1].split(" ")[0]
        assert cut_short.startswith("resp_")

        dev.start()
        client = dev.sdk()
        for response_id, text in ((running.id, "You said: one two three"), (cut_short, "You said: four five")):
            deadline = time.monotonic() + 60
            while (
                client.responses.retrieve(response_id).status in ("queued", "in_progress")
                and time.monotonic() < deadline
            ):
                time.sleep(0.2)
            ended = client.responses.retrieve(response_id)
            assert ended.status == "completed" and ended.output_text == text
        assert dev.stop(signal.SIGINT) == 0
    finally:
        if dev.process is not None and dev.process.poll() is None:
            os.killpg(dev.process.pid, signal.SIGKILL)


@needs_bubblewrap
def test_the_demo_model_runs_code_with_nothing_configured(demo_dev: DevStack):
    """`Use code: ...` with a code_interpreter tool: the code runs in a sandboxed container."""
    client = demo_dev.sdk()
    response = client.responses.create(
        model="demo/echo",
        input="Use code: import pandas as pd; print(pd.Series([20, 22]).sum())",
        tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
    )
    assert response.status == "completed", response.error
    call, message = response.output
    assert call.type == "code_interpreter_call" and call.status == "completed"
    assert message.content[0].text == "The tool code_interpreter answered: 42."
