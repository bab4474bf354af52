"""The benchmark's processes: the scripted backend, `durable-responses dev` and `serve`, a CPU
hog, and the CPU time each has used (read from /proc)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.load import ProcessCpu

CLI = str(Path(sys.executable).parent / "durable-responses")
ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _wait_healthy(process: subprocess.Popen[Any], url: str, what: str, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with code {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit(f"{what} did not become healthy within {seconds:.0f} s")


@dataclass
class Backend:
    process: subprocess.Popen[bytes]
    base_url: str

    @classmethod
    def start(cls, latency_ms: float, rate_limit: float | None = None) -> Backend:
        port = free_port()
        limit = ["--rate-limit", str(rate_limit)] if rate_limit else []
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.scripted_backend",
                "--port",
                str(port),
                "--latency",
                str(latency_ms / 1000),
                *limit,
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        backend = cls(process, f"http://127.0.0.1:{port}/v1")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{backend.base_url}/_calls", timeout=1)
                return backend
            except httpx.HTTPError:
                time.sleep(0.05)
        raise SystemExit("the scripted backend did not start")

    def script(self, model: str, replies: list[dict[str, Any]]) -> None:
        httpx.post(f"{self.base_url}/_script", json={"model": model, "replies": replies}, timeout=10).raise_for_status()

    def calls(self) -> dict[str, int]:
        calls: dict[str, int] = httpx.get(f"{self.base_url}/_calls", timeout=10).json()
        return calls

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@dataclass
class Dev:
    """`durable-responses dev` on a fresh data dir, and its Temporal server child."""

    process: subprocess.Popen[bytes]
    url: str
    temporal_port: int
    data_dir: str

    @classmethod
    def start(
        cls, data_dir: str, backend: Backend | None, env: dict[str, str] | None = None, code: Path | None = None
    ) -> Dev:
        """`backend=None`: with no backend configured, so the demo model answers. `code`: run
        that checkout's code (a git worktree of another revision, `bench/ab.py`), on the module
        path and as the working directory, so the processes `dev` starts with `python -m` run
        it too, whichever revision it is."""
        port, temporal_port = free_port(), free_port()
        env = (env or {}) | ({"PYTHONPATH": str(code)} if code is not None else {})
        if backend is None:
            environment = {
                name: value
                for name, value in os.environ.items()
                if name not in ("INFERENCE_BASE_URL", "INFERENCE_API_KEY", "OPENAI_API_KEY")
            }
            environment |= {"LOG_LEVEL": "WARNING"} | env
        else:
            environment = (
                os.environ
                | {"INFERENCE_BASE_URL": backend.base_url, "INFERENCE_API_KEY": "bench", "LOG_LEVEL": "WARNING"}
                | env
            )
        process = subprocess.Popen(
            [
                CLI,
                "dev",
                "--data-dir",
                data_dir,
                "--port",
                str(port),
                "--temporal-port",
                str(temporal_port),
                "--ui-port",
                str(free_port()),
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(Path(data_dir) / "dev.log", "ab"),
            env=environment,  # noqa: SIM115
            cwd=code,
        )
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(process, f"{url}/health", "durable-responses dev")
        return cls(process, url, temporal_port, data_dir)

    @property
    def temporal_address(self) -> str:
        return f"127.0.0.1:{self.temporal_port}"

    def temporal_pids(self) -> list[int]:
        return children_of(self.process.pid)

    def stop(self) -> None:
        stop(self.process)


def start_serve(dev: Dev, backend: Backend) -> tuple[subprocess.Popen[bytes], str]:
    """A second API process (no worker) on the same Temporal, store and backend (it makes the
    first turn's model calls itself: `activities/early_calls.py`)."""
    port = free_port()
    process = subprocess.Popen(
        [
            CLI,
            "serve",
            "--port",
            str(port),
            "--temporal-address",
            dev.temporal_address,
            "--database-url",
            f"sqlite:///{dev.data_dir}/responses.db",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=os.environ | {"LOG_LEVEL": "WARNING", "INFERENCE_BASE_URL": backend.base_url, "INFERENCE_API_KEY": "bench"},
    )
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(process, f"{url}/health", "durable-responses serve")
    return process, url


def start_otlp_sink() -> tuple[subprocess.Popen[str], str]:
    """A stand-in OTLP/HTTP collector (`bench/otlp_sink.py`)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.otlp_sink", "--port", str(port)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    url = f"http://127.0.0.1:{port}"
    _wait_healthy(process, url, "the OTLP sink")
    return process, url


def start_cpu_hog() -> subprocess.Popen[bytes]:
    """A process that keeps one core busy until it is stopped."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def stop(process: subprocess.Popen[Any], timeout: float = 30) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cpu_reader(backend: Backend, server: list[int], temporal: list[int] | None = None) -> Callable[[], ProcessCpu]:
    """Reads the CPU seconds so far of a server's processes, its Temporal server's (for `dev`),
    this process's (the load generator) and the backend's."""

    def read() -> ProcessCpu:
        return ProcessCpu(
            server=sum(cpu_seconds(pid) for pid in server),
            temporal=sum(cpu_seconds(pid) for pid in temporal or []),
            load_generator=time.process_time(),
            backend=cpu_seconds(backend.process.pid),
        )

    return read


def dev_cpu(dev: Dev, backend: Backend) -> Callable[[], ProcessCpu]:
    """`cpu_reader` for `dev`: its own process, and its Temporal server as Temporal."""
    return cpu_reader(backend, [dev.process.pid], dev.temporal_pids())


def measure_floor(dev: Dev, requests: int) -> dict[str, Any]:
    """The Temporal floor (`bench/floor.py`) on `dev`'s Temporal server, in a process of its own."""
    output = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.floor",
            "--address",
            dev.temporal_address,
            "--requests",
            str(requests),
            "--temporal-pids",
            ",".join(str(pid) for pid in dev.temporal_pids()),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    floor: dict[str, Any] = json.loads(output.stdout.strip().splitlines()[-1])
    return floor
