"""The real Codex CLI (npm `@openai/codex`, unchanged) against this server's API and worker,
with the scripted backend as its model: `codex exec` runs a shell command through a function
call, edits a file with its freeform `apply_patch` tool, and answers with the results.

The CLI is installed from npm into a cache the first time (`CODEX_BIN` names one already
installed); without npm the test is skipped, saying so."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.dev_stack import DevStack
from tests.support.scripted_backend import Reply, ScriptedBackend
from tests.support.stack import Stack
from tests.support.waiting import eventually

CODEX_VERSION = "0.171.0"
CODEX_MODEL = "gpt-5.5"
"""A model Codex knows: its catalog gives it the freeform `apply_patch` tool."""
CACHE = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    / "durable-responses-tests"
    / f"codex-{CODEX_VERSION}"
)
PATCH = "*** Begin Patch\n*** Add File: greeting.txt\n+hello from apply_patch\n*** End Patch\n"


@pytest.fixture(scope="session")
def codex_cli() -> str:
    given = os.environ.get("CODEX_BIN")
    if given:
        return given
    binary = CACHE / "node_modules" / ".bin" / "codex"
    if binary.exists():
        return str(binary)
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("the Codex CLI test needs npm (to install @openai/codex), and npm is not on PATH")
    CACHE.mkdir(parents=True, exist_ok=True)
    installed = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(CACHE), f"@openai/codex@{CODEX_VERSION}"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if installed.returncode != 0 or not binary.exists():
        pytest.skip(f"npm could not install @openai/codex@{CODEX_VERSION}: {installed.stderr.strip()[-500:]}")
    return str(binary)


def codex_home(directory: Path, base_url: str, *, websockets: bool = False) -> Path:
    """Codex's config: this server as its model provider (over a WebSocket, `websockets`)."""
    home = directory / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(f"""model = "{CODEX_MODEL}"
model_provider = "durable"
approval_policy = "never"

[model_providers.durable]
name = "durable-responses"
base_url = "{base_url}"
wire_api = "responses"
env_key = "DURABLE_RESPONSES_KEY"
supports_websockets = {str(websockets).lower()}

[features]
apply_patch_freeform = true
""")
    return home


async def codex_exec(codex_cli: str, home: Path, workspace: Path, prompt: str) -> tuple[int | None, str]:
    """`codex exec <prompt>` in a new `workspace`, with the config in `home`: its exit code and
    transcript."""
    workspace.mkdir()
    process = await asyncio.create_subprocess_exec(
        codex_cli,
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        prompt,
        cwd=workspace,
        env=os.environ | {"CODEX_HOME": str(home), "DURABLE_RESPONSES_KEY": "unused"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), 120)
    except TimeoutError:
        process.kill()
        raise
    return process.returncode, output.decode(errors="replace")


async def test_codex_exec_runs_a_command_and_edits_a_file(
    codex_cli: str, stack: Stack, backend: ScriptedBackend, tmp_path: Path
):
    earlier = len(backend.requests(CODEX_MODEL))  # Codex's model name is fixed: the other store's run used it too
    backend.script(
        CODEX_MODEL,
        [
            Reply(tool_calls=[("exec_command", {"cmd": "echo hello-from-codex"})]),
            Reply(tool_calls=[("apply_patch", {"input": PATCH})]),
            Reply(text="All done."),
        ],
    )
    workspace = tmp_path / "workspace"
    returncode, transcript = await codex_exec(
        codex_cli, codex_home(tmp_path, stack.base_url), workspace, "make a greeting file"
    )
    assert returncode == 0, transcript
    assert transcript.rstrip().endswith("All done."), transcript
    assert (workspace / "greeting.txt").read_text() == "hello from apply_patch\n"

    requests = backend.requests(CODEX_MODEL)[earlier:]
    assert len(requests) == 3
    shell_result = [message for message in requests[1]["messages"] if message["role"] == "tool"]
    assert "hello-from-codex" in shell_result[-1]["content"]
    patch_call = requests[2]["messages"][-2]["tool_calls"][0]["function"]
    assert patch_call["name"] == "apply_patch" and json.loads(patch_call["arguments"]) == {"input": PATCH}
    patch_result = requests[2]["messages"][-1]
    assert patch_result["role"] == "tool" and "greeting.txt" in patch_result["content"]


def websocket_upgrades(dev: DevStack) -> int:
    """WebSocket upgrades to `/v1/responses` that `dev` accepted, from its `/metrics`."""
    scrape = httpx.get(f"{dev.url}/metrics", timeout=10).text
    found = re.search(
        r'^durable_responses_http_requests_total\{method="WEBSOCKET",route="/v1/responses",status="101"\} (\S+)$',
        scrape,
        re.MULTILINE,
    )
    return int(float(found.group(1))) if found else 0


async def test_codex_exec_over_its_websocket_transport_against_dev(
    codex_cli: str, backend: ScriptedBackend, tmp_path: Path
):
    """`durable-responses dev` as a user runs it, and Codex's WebSocket transport
    (`supports_websockets`): its turns are `response.create` messages on a connection, a
    command's output sent back on it."""
    backend.script(
        CODEX_MODEL,
        [Reply(tool_calls=[("exec_command", {"cmd": "echo over-a-websocket"})]), Reply(text="Done over a socket.")],
    )
    earlier = len(backend.requests(CODEX_MODEL))
    dev = DevStack(tmp_path / "dev", backend)
    try:
        dev.start()
        home = codex_home(tmp_path, f"{dev.url}/v1", websockets=True)
        returncode, transcript = await codex_exec(codex_cli, home, tmp_path / "workspace", "echo something")
        assert returncode == 0, transcript
        # Counted when a connection ends: Codex's, as it exits.
        await eventually(lambda: websocket_upgrades(dev) >= 1, "Codex's WebSocket to be counted", seconds=10)
    finally:
        if dev.process is not None and dev.process.poll() is None:
            dev.stop()
    assert transcript.rstrip().endswith("Done over a socket."), transcript
    requests = backend.requests(CODEX_MODEL)[earlier:]
    assert len(requests) == 2
    shell_result = [message for message in requests[1]["messages"] if message["role"] == "tool"]
    assert "over-a-websocket" in shell_result[-1]["content"]


async def test_codex_with_the_docs_config_runs_a_command_against_the_demo(codex_cli: str, tmp_path: Path):
    """`durable-responses dev` with nothing configured (the demo model) and Codex with
    `docs/api.md`'s config and nothing else: its whole default request fits the demo's window,
    and asked to, the demo runs a command through Codex's shell tool and reports its output."""
    dev = DevStack(tmp_path / "dev", backend=None)
    docs = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    config = re.search(r"`~/.codex/config.toml`:\n\n```toml\n(.*?)```", docs, re.DOTALL)
    assert config is not None, "docs/api.md no longer shows Codex's config"
    try:
        dev.start()
        home = tmp_path / "codex-home"
        home.mkdir()
        (home / "config.toml").write_text(config.group(1).replace("http://127.0.0.1:8000/v1", f"{dev.url}/v1"))
        returncode, transcript = await codex_exec(
            codex_cli, home, tmp_path / "workspace", "Use the shell: echo hello-from-the-demo"
        )
    finally:
        if dev.process is not None and dev.process.poll() is None:
            dev.stop()
    assert returncode == 0, transcript
    assert "The tool exec_command answered:" in transcript and "hello-from-the-demo" in transcript, transcript


@pytest.mark.parametrize("provider_name", ["durable-responses", "OpenAI"])
async def test_codex_with_a_small_context_window_compacts_and_carries_on(
    codex_cli: str, stack: Stack, backend: ScriptedBackend, tmp_path: Path, provider_name: str
):
    """Codex compacts once a turn's usage passes its `model_auto_compact_token_limit`: with a
    provider of its own naming it asks the model for a summary in an ordinary request; named
    "OpenAI", it calls `POST /v1/responses/compact`. Either way it carries on from the summary."""
    earlier = len(backend.requests(CODEX_MODEL))
    backend.script(
        CODEX_MODEL,
        [
            Reply(tool_calls=[("exec_command", {"cmd": "echo step-one"})], usage=(3_000, 20)),
            Reply(text="SUMMARY: the user wanted a greeting; `echo step-one` ran.", usage=(500, 20)),
            Reply(text="Carried on after compacting.", usage=(400, 10)),
        ],
    )
    home = codex_home(tmp_path, stack.base_url)
    config = home / "config.toml"
    config.write_text(
        config.read_text()
        .replace('name = "durable-responses"', f'name = "{provider_name}"')
        .replace(
            'approval_policy = "never"\n',
            'approval_policy = "never"\nmodel_context_window = 4000\nmodel_auto_compact_token_limit = 2000\n',
        )
    )
    returncode, transcript = await codex_exec(codex_cli, home, tmp_path / "workspace", "run step one, then tell me")
    requests = backend.requests(CODEX_MODEL)[earlier:]
    assert returncode == 0, transcript
    assert transcript.rstrip().endswith("Carried on after compacting."), transcript
    assert len(requests) == 3, [r["messages"][-1] for r in requests]
    summarising, carrying_on = requests[1]["messages"], requests[2]["messages"]
    if provider_name == "OpenAI":  # a `compaction_trigger`: this server's summariser ran
        assert summarising[0]["content"].startswith("COMPACT THE CONVERSATION")
        assert "step-one" in summarising[-1]["content"]  # the transcript holds the command's output
    else:  # Codex's own summary prompt, as an ordinary request
        assert summarising[-1]["role"] == "user" and "summary" in summarising[-1]["content"].lower()
    assert any("SUMMARY: the user wanted a greeting" in str(message.get("content")) for message in carrying_on)
    assert not any(message["role"] == "tool" for message in carrying_on)  # the call and its output were compacted
