"""`code_interpreter` end to end, through the official SDK with strict validation, with code
really run behind bubblewrap's walls: pandas state kept from one call to the next, a chart
drawn with matplotlib and downloaded from the container's files, an `"auto"` container made
for the response and kept by the next one in the chain, a failing call that tells the model
its error, code past its time stopped, a cancel that interrupts running code, and bad input a
4xx naming its parameter that leaves no container behind."""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from access.quotas import QuotaSettings
from models.quotas import ProjectQuotas
from sandbox.containers import ContainerHost
from sandbox.settings import SandboxSettings
from tests.stack.test_fuzz import as_json, code_tools, shell_tools
from tests.support.histories import keep_recording, replayer
from tests.support.sandboxes import needs_bubblewrap, remove_containers
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import EmptyStore, Stack, empty_store, running_stack
from tests.support.waiting import eventually
from worker.code_execution import ContainerChores, HostChores, host_id

pytestmark = [pytest.mark.one_store, needs_bubblewrap]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
async def code_stack(
    temporal_address: str, backend: ScriptedBackend, store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> AsyncIterator[Stack]:
    store: EmptyStore = empty_store(store_kind, tmp_path, request)
    longer = request.node.get_closest_marker("command_seconds")
    seconds = longer.args[0] if longer else 5
    sandbox = SandboxSettings(runtime="bubblewrap", directory=tmp_path / "containers", command_seconds=seconds)
    try:
        async with running_stack(temporal_address, backend, store, sandbox=sandbox) as stack:
            yield stack
    finally:
        await remove_containers(sandbox.directory)


@pytest.fixture
async def client(code_stack: Stack) -> AsyncIterator[openai.AsyncOpenAI]:
    sdk = code_stack.sdk()
    yield sdk
    await sdk.close()


def told(backend: ScriptedBackend, model: str, request: int) -> list[str]:
    """What the model was told of its code calls in its `request`-th request."""
    return [m["content"].strip() for m in backend.requests(model)[request]["messages"] if m["role"] == "tool"]


def item_id(event: object) -> str | None:
    item = getattr(event, "item", None)
    return getattr(item, "id", None)


def code(source: str) -> tuple[str, dict[str, str]]:
    return ("code_interpreter", {"code": source})


async def test_state_persists_and_a_chart_is_downloaded(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    container = await client.containers.create(name="analysis")
    await client.containers.files.create(
        container.id, file=("sales.csv", b"region,amount\nnorth,3\nsouth,5\nnorth,4\n")
    )
    backend.script(
        model,
        [
            Reply(tool_calls=[code("import pandas as pd\ndf = pd.read_csv('/mnt/data/sales.csv')\nlen(df)")]),
            Reply(
                tool_calls=[
                    code(
                        "totals = df.groupby('region').amount.sum()\nprint(totals.to_dict())\n"
                        "import matplotlib.pyplot as plt\ntotals.plot.bar()\nplt.savefig('/mnt/data/totals.png')"
                    )
                ]
            ),
            Reply(text="North sold 7 and south 5: see sandbox:/mnt/data/totals.png"),
        ],
    )
    response = await client.responses.create(
        model=model,
        input="Total sales by region, with a chart",
        tools=[{"type": "code_interpreter", "container": container.id}],
        include=["code_interpreter_call.outputs"],
    )
    assert response.status == "completed", response.error
    first, second, message = response.output
    assert first.type == second.type == "code_interpreter_call"
    assert first.status == second.status == "completed" and first.container_id == container.id
    assert first.outputs and first.outputs[0].type == "logs" and first.outputs[0].logs.strip() == "3"
    assert told(backend, model, 1) == ["3"]
    assert "{'north': 7, 'south': 5}" in told(backend, model, 2)[1]  # df was still there
    assert "sandbox:/mnt/data/totals.png" in told(backend, model, 2)[1]

    files = {each.path: each async for each in client.containers.files.list(container.id)}
    assert set(files) == {"/mnt/data/sales.csv", "/mnt/data/totals.png"}
    assert files["/mnt/data/totals.png"].source == "assistant"
    chart = await client.containers.files.content.retrieve(files["/mnt/data/totals.png"].id, container_id=container.id)
    assert chart.content.startswith(PNG_MAGIC)

    citation = message.content[0].annotations[0]
    assert citation.type == "container_file_citation" and citation.container_id == container.id
    assert citation.file_id == files["/mnt/data/totals.png"].id and citation.filename == "totals.png"

    handle = code_stack.client.get_workflow_handle(response.id)
    await handle.result()
    assert (await replayer().replay_workflow(await handle.fetch_history())).replay_failure is None
    await keep_recording("code_interpreter", code_stack.client, response.id)


async def test_an_auto_container_is_made_and_kept_along_the_chain(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(model, [Reply(tool_calls=[code("x = 41")]), Reply(text="set")])
    first = await client.responses.create(
        model=model, input="set x", tools=[{"type": "code_interpreter", "container": {"type": "auto"}}]
    )
    assert first.status == "completed"
    container_id = first.output[0].container_id
    assert container_id.startswith("cntr_") and first.tools[0].container == container_id
    assert (await client.containers.retrieve(container_id)).status == "running"
    backend.script(model, [Reply(tool_calls=[code("x + 1")]), Reply(text="42")])
    second = await client.responses.create(
        model=model,
        input="x + 1?",
        previous_response_id=first.id,
        tools=[{"type": "code_interpreter", "container": "auto"}],  # the short form
    )
    assert second.output[0].container_id == container_id
    assert told(backend, model, 3)[-1] == "42"  # x was still there


async def test_errors_time_and_the_streamed_events(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(
        model,
        [
            Reply(tool_calls=[code("1 / 0")]),
            Reply(tool_calls=[code("import time\nprint('before', flush=True)\ntime.sleep(120)")]),
            Reply(text="done"),
        ],
    )
    events = []
    async with await client.responses.create(
        model=model,
        input="fail, then sleep",
        tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
        stream=True,
    ) as stream:
        async for event in stream:
            events.append(event)
    completed = events[-1].response
    failing, sleeping, _ = completed.output
    assert failing.status == "completed"  # the code ran: its error is what it printed
    assert "ZeroDivisionError" in told(backend, model, 1)[0]
    assert sleeping.status == "incomplete"
    said = told(backend, model, 2)[1]
    assert said.startswith("before") and "ran past its 5 s and was stopped" in said
    types = [event.type for event in events if failing.id in (getattr(event, "item_id", None), item_id(event))]
    assert types == [
        "response.output_item.added",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed",
        "response.output_item.done",
    ]


async def test_a_cancel_interrupts_running_code(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(
        model,
        [Reply(tool_calls=[code("import time\nfor i in range(600):\n    time.sleep(0.1)\n")]), Reply(text="x")],
    )
    started = await client.responses.create(
        model=model,
        input="sleep",
        tools=[{"type": "code_interpreter", "container": {"type": "auto"}}],
        background=True,
    )
    for _ in range(200):
        current = await client.responses.retrieve(started.id)
        if current.output and current.output[0].type == "code_interpreter_call":
            break
        await asyncio.sleep(0.1)
    container_id = current.output[0].container_id
    runs = code_stack.settings.sandbox.directory / container_id / "control" / "runs"
    for _ in range(200):  # the interpreter took the call: it runs
        if list(runs.glob("*")):
            break
        await asyncio.sleep(0.05)
    cancelled = await client.responses.cancel(started.id)
    assert cancelled.status == "cancelled"
    # The cancel is answered once the store has it; the worker stops the run as it hears of it,
    # an instant later (the code alone would run 60 s).
    try:
        answers = await eventually(
            lambda: [json.loads(path.read_text()) for path in runs.glob("*/status.json")],
            "the interrupted run's status",
            seconds=10,
        )
    except pytest.fail.Exception:  # seen twice in full runs, never alone: say what the container held
        pytest.fail(f"no status for the interrupted run; the container held:\n{what_is_in(runs.parent.parent)}")
    assert answers[0]["interrupted"] is True


def what_is_in(home: Path) -> str:
    """Each file of a container's home but its data, with what it says when that is short."""
    lines = []
    for path in sorted(home.rglob("*")):
        if path.is_file() and "data" not in path.relative_to(home).parts:
            said = path.read_bytes()[:800] if path.stat().st_size <= 800 else b"..."
            lines.append(f"{path.relative_to(home)}: {said!r}")
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("tool", "param"),
    [
        ({"type": "code_interpreter", "container": "cntr_missing"}, "tools[0].container"),
        (
            {"type": "code_interpreter", "container": {"type": "auto", "memory_limit": "64g"}},
            "tools[0].container.memory_limit",
        ),
        (
            {"type": "code_interpreter", "container": {"type": "auto", "file_ids": ["file_nope"]}},
            "tools[0].container.file_ids[0]",
        ),
        (
            {
                "type": "code_interpreter",
                "container": {"type": "auto", "network_policy": {"type": "allowlist", "allowed_domains": ["a b"]}},
            },
            "tools[0].container.network_policy",
        ),
        ({"type": "code_interpreter"}, "tools[0].container"),
        ({"type": "code_interpreter", "container": {"type": "manual"}}, "tools[0].container"),
    ],
)
async def test_bad_input_names_its_parameter_and_leaves_no_container(code_stack: Stack, tool: dict, param: str):
    async with code_stack.http() as http:
        before = (await http.get("/v1/containers", params={"limit": 100})).json()["data"]
        answer = await http.post("/v1/responses", json={"model": "m", "input": "hi", "tools": [tool]})
        assert answer.status_code in (400, 404), answer.text
        assert (answer.json()["error"]["param"] or "").startswith(param), answer.text
        assert (await http.get("/v1/containers", params={"limit": 100})).json()["data"] == before


async def test_the_shell_runs_commands_in_the_container_code_shares(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(
        model,
        [
            Reply(tool_calls=[code("open('/mnt/data/made.txt', 'w').write('from python')")]),
            Reply(
                tool_calls=[
                    (
                        "shell",
                        {
                            "commands": ["cat /mnt/data/made.txt", "echo oops >&2; exit 3", "sleep 30"],
                            "timeout_ms": 1000,
                        },
                    )
                ]
            ),
            Reply(text="done"),
        ],
    )
    events = []
    async with await client.responses.create(
        model=model,
        input="read it",
        tools=[
            {"type": "code_interpreter", "container": {"type": "auto"}},
            {"type": "shell", "environment": {"type": "container_auto"}},
        ],
        stream=True,
    ) as stream:
        async for event in stream:
            events.append(event)
    response = events[-1].response
    assert response.status == "completed"
    ran, shell_call, shell_output, message = response.output
    assert shell_call.type == "shell_call" and shell_call.status == "completed"
    assert shell_call.environment.container_id == ran.container_id  # one container for both tools
    assert shell_output.type == "shell_call_output" and shell_output.call_id == shell_call.call_id
    first, second, third = shell_output.output
    assert first.stdout == "from python" and first.outcome.type == "exit" and first.outcome.exit_code == 0
    assert second.stderr.strip() == "oops" and second.outcome.exit_code == 3
    assert third.outcome.type == "timeout"
    said = told(backend, model, 2)[-1]
    assert "$ cat /mnt/data/made.txt\nfrom python" in said and "(exit code 3)" in said and "(timed out)" in said
    deltas = [event for event in events if event.type == "response.shell_call_output_content.delta"]
    assert "".join(event.delta.stdout or "" for event in deltas if event.command_index == 0) == "from python"
    assert {event.output_index for event in deltas} == {2}
    await code_stack.client.get_workflow_handle(response.id).result()
    await keep_recording("shell", code_stack.client, response.id)


async def test_no_code_tool_breaks_the_server_or_leaves_a_container_when_refused(code_stack: Stack):
    """Property, over hostile `code_interpreter` and `shell` tools (`tests/stack/test_fuzz.py`'s
    strategies): never a 500; a refusal in OpenAI's shape that makes no container."""
    outcomes: Counter[str] = Counter()
    base = code_stack.base_url.removesuffix("/v1")

    def containers(http: httpx.Client) -> int:
        return len(http.get("/v1/containers", params={"limit": 100}).json()["data"])

    @settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(tools=st.lists(st.one_of(code_tools, shell_tools), min_size=1, max_size=2))
    def one_request(tools: list) -> None:
        with httpx.Client(base_url=base, timeout=30) as http:
            before = containers(http)
            body = as_json({"model": "m", "input": "hi", "tools": tools})
            answer = http.post("/v1/responses", content=body, headers={"content-type": "application/json"})
            assert answer.status_code < 500, answer.text
            if answer.status_code == 200:
                outcomes["200"] += 1
                return
            error = answer.json()["error"]
            assert set(error) == {"message", "type", "param", "code"} and error["param"], error
            outcomes[f"{answer.status_code} {error['param']}"] += 1
            assert containers(http) == before

    await asyncio.to_thread(one_request)
    assert outcomes["200"] > 0 and len(outcomes) > 2, outcomes


async def test_a_project_at_its_container_quota_is_refused_naming_the_tool(
    temporal_address: str, backend: ScriptedBackend, store_kind: str, tmp_path: Path, request: pytest.FixtureRequest
):
    """A response whose `code_interpreter` would make one container more than its project may
    keep gets a 400 `limit_exceeded` naming that tool's `container`; nothing of it is kept."""
    store = empty_store(store_kind, tmp_path, request)
    sandbox = SandboxSettings(runtime="bubblewrap", directory=tmp_path / "containers")
    quotas = QuotaSettings(project=ProjectQuotas(max_containers=1))
    tools = [{"type": "function", "name": "f", "parameters": {}}, {"type": "code_interpreter", "container": "auto"}]
    try:
        async with running_stack(temporal_address, backend, store, sandbox=sandbox, quotas=quotas) as stack:
            async with stack.http() as http:
                first = await http.post("/v1/responses", json={"model": "m", "input": "hi", "tools": tools})
                assert first.status_code == 200, first.text
                refused = await http.post("/v1/responses", json={"model": "m", "input": "hi", "tools": tools})
                assert refused.status_code == 400, refused.text
                error = refused.json()["error"]
                assert (error["code"], error["param"]) == ("limit_exceeded", "tools[1].container")
                assert "PROJECT_MAX_CONTAINERS" in error["message"]
                listed = (await http.get("/v1/containers")).json()["data"]
                assert len(listed) == 1
                assert len((await http.get("/v1/responses", params={"limit": 100})).json()["data"]) == 1
    finally:
        await remove_containers(sandbox.directory)


@pytest.mark.command_seconds(300)  # the busy container's command runs until the test cancels it, however slow CI is
async def test_idle_containers_expire_never_while_busy_and_deleted_ones_leave_the_host(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    repository, directory = code_stack.repository, code_stack.settings.sandbox.directory
    chores = HostChores(repository.containers, ContainerHost.open(directory), host_id(directory))
    idle, busy, deleted, unplaced = [await client.containers.create(name=name) for name in ("i", "b", "d", "u")]
    for each in (idle, deleted):
        backend.script(model, [Reply(tool_calls=[code("1")]), Reply(text="ok")])
        await client.responses.create(
            model=model, input="x", tools=[{"type": "code_interpreter", "container": each.id}]
        )
    backend.script(model, [Reply(tool_calls=[code("import time\ntime.sleep(600)")]), Reply(text="ok")])
    sleeping = await client.responses.create(
        model=model, input="x", tools=[{"type": "code_interpreter", "container": busy.id}], background=True
    )
    runs = directory / busy.id / "control" / "runs"
    await eventually(lambda: runs.exists() and list(runs.glob("*")), "the busy container's command to start")
    long_ago = int(time.time()) - 3600
    for each in (idle, busy, unplaced):
        await repository.containers.touch(each.id, now=long_ago)
    await client.containers.delete(deleted.id)

    await chores.round()
    assert (await client.containers.retrieve(idle.id)).status == "expired"
    assert not (directory / idle.id).exists()  # its interpreter and files are gone from the host
    assert (await client.containers.retrieve(busy.id)).status == "running"  # a command of it runs
    assert not (directory / deleted.id).exists() and await repository.containers.get(deleted.id) is None
    assert (await client.containers.retrieve(unplaced.id)).status == "running"  # no host of its own: the cluster's
    assert await ContainerChores(repository.containers).expire_abandoned() >= 1
    assert (await client.containers.retrieve(unplaced.id)).status == "expired"
    await client.responses.cancel(sleeping.id)


async def test_code_or_commands_past_their_bounds_are_not_run_and_the_model_is_told(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    backend.script(
        model,
        [
            Reply(tool_calls=[code("x = 1\n" * 50_000)]),
            Reply(tool_calls=[("shell", {"commands": ["true"] * 40})]),
            Reply(text="done"),
        ],
    )
    response = await client.responses.create(
        model=model,
        input="too much",
        tools=[
            {"type": "code_interpreter", "container": {"type": "auto"}},
            {"type": "shell", "environment": {"type": "container_auto"}},
        ],
    )
    long_code, shell_call, shell_output, _ = response.output
    assert long_code.status == "failed" and shell_output.status == "incomplete" and shell_output.output == []
    assert "longer than 262144 characters" in told(backend, model, 1)[-1]
    assert "at most 32 commands" in told(backend, model, 2)[-1]
    assert not list((code_stack.settings.sandbox.directory / long_code.container_id / "runs").glob("*"))


async def test_code_a_call_leaves_behind_does_not_run_between_calls(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """A thread one call starts keeps time; the next call, two seconds later, finds it stood
    still between the calls: code lives as long as its call (issue 59, M6)."""
    from sandbox.cgroups import Cgroups, CgroupUnavailable
    from sandbox.containers import scope_of

    try:
        if Cgroups.open(scope_of(code_stack.settings.sandbox.directory)).freezer is None:
            pytest.skip("no cgroup freezer here: a call's leftovers are not stopped")
    except CgroupUnavailable:
        pytest.skip("no cgroups here")
    container = await client.containers.create(name="leftovers")
    starting = (
        "import threading, time\nticks = []\n"
        "def tick():\n    while True:\n        ticks.append(time.monotonic())\n        time.sleep(0.01)\n"
        "threading.Thread(target=tick, daemon=True).start()\ntime.sleep(0.2)\nlen(ticks) > 0"
    )
    backend.script(model, [Reply(tool_calls=[code(starting)]), Reply(text="started")])
    first = await client.responses.create(
        model=model, input="start", tools=[{"type": "code_interpreter", "container": container.id}]
    )
    assert first.status == "completed" and told(backend, model, 1) == ["True"]
    await asyncio.sleep(2.0)
    gap = "print(round(max(b - a for a, b in zip(ticks, ticks[1:])), 1))"
    backend.script(model, [Reply(tool_calls=[code(gap)]), Reply(text="measured")])
    second = await client.responses.create(
        model=model, input="measure", tools=[{"type": "code_interpreter", "container": container.id}]
    )
    assert second.status == "completed"
    assert float(told(backend, model, 3)[0]) >= 1.5, told(backend, model, 3)


MODERATED = {"model": "omni-moderation-latest", "policy": {"output": {"mode": "block"}}}


async def test_a_commands_flagged_output_is_never_sent(
    code_stack: Stack, client: openai.AsyncOpenAI, backend: ScriptedBackend, model: str
):
    """Issue 60 (M4): under `output: block`, a shell command's output streamed in
    `shell_call_output_content.delta` and stayed in the response before any check; code's logs
    took the same path. The commands are clean (the phrase is put together as they run): what
    they print is withheld, the response ends `content_filter`, the model is not asked again."""
    for kind, tool, call in (
        (
            "shell",
            {"type": "shell", "environment": {"type": "container_auto"}},
            ("shell", {"commands": ["echo we mur''der them"]}),
        ),
        ("code", {"type": "code_interpreter", "container": {"type": "auto"}}, code("print('we mur' + 'der them')")),
    ):
        backend.script(f"{model}-{kind}", [Reply(tool_calls=[call]), Reply(text="never said")])
        seen = [
            event
            async for event in await client.responses.create(
                model=f"{model}-{kind}",
                input="run it",
                tools=[tool],
                moderation=MODERATED,
                include=["code_interpreter_call.outputs"],
                stream=True,
            )
        ]
        final = seen[-1].response
        assert final.status == "incomplete" and final.incomplete_details.reason == "content_filter", final
        assert not any("murder" in json.dumps(event.model_dump(mode="json")) for event in seen), tool
        assert "murder" not in json.dumps((await client.responses.retrieve(final.id)).model_dump(mode="json"))
        assert len(backend.requests(f"{model}-{kind}")) == 1, "the model was asked again"
    backend.script(model, [Reply(tool_calls=[("shell", {"commands": ["echo all quiet"]})]), Reply(text="quiet")])
    quiet = await client.responses.create(
        model=model,
        input="run it",
        tools=[{"type": "shell", "environment": {"type": "container_auto"}}],
        moderation=MODERATED,
    )
    assert quiet.status == "completed" and quiet.output[1].output[0].stdout == "all quiet\n"
