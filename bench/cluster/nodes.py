"""The deployment's processes on the bed's nodes, each in its node's namespace and process
group: PostgreSQL, the Temporal dev server, `serve`s and `worker`s (each worker its own
sandbox host with its own `SANDBOX_DIR`), the scripted backend and the bed's MCP server. A
process can be paused (SIGSTOP to its group), resumed, killed with SIGKILL and started again
on the same disk, or (a worker's host lost for good) on a new empty one. Its output goes to a
log file in the bed's directory. What the checker reads never comes from a node's own disk,
but for the notes the workload's commands leave in their containers, which the bed counts on
every host's disk, a lost one's before it goes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bench.cluster.network import BedError, Network, Node
from bench.cluster.workload import RUNS_FILE
from models.visibility import SEARCH_ATTRIBUTES
from sandbox.containers import ContainerHost, SandboxUnavailable
from sandbox.identity import UidRange
from tests.support.sandboxes import remove_everything
from worker.dev import DEV_SERVER_CONFIG, dynamic_config_arguments, temporal_binary

ROOT = Path(__file__).resolve().parents[2]
PG_PORT = 5432
TEMPORAL_PORT = 7233
API_PORT = 8000
BACKEND_PORT = 9000
TOOLS_PORT = 9100
SECRETS_KEY = base64.urlsafe_b64encode(bytes(range(32))).decode()
"""The bed's key for secrets at rest (a fixed one: a run is thrown away)."""
WEBHOOK_SECRET = "whsec_" + base64.b64encode(bytes(range(24))).decode()
WORKFLOW_TASK_TIMEOUT_SECONDS = 5
HOST_WAIT_SECONDS = 20
BUDGETS: dict[str, float] = {"echo": 120}
"""The models with a budget upstream (`rpm` in the models file), shared by every process through
the store: the checker holds the backend's log to them. Every other name goes to one `*`
deployment with none (its rate learned from the backend's 429s)."""


@dataclass
class Process:
    name: str
    node: Node
    argv: list[str]
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path = ROOT
    popen: subprocess.Popen[bytes] | None = None
    paused: bool = False

    def start(self) -> Process:
        with self.log.open("ab") as output:
            self.popen = subprocess.Popen(
                self.node.command(self.argv),
                env=os.environ | self.env,
                cwd=self.cwd,
                stdout=output,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.paused = False
        return self

    def _signal(self, number: signal.Signals) -> None:
        if self.popen is not None and self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, number)
            except ProcessLookupError:
                pass

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def kill(self) -> None:
        """SIGKILL to the whole group, as a host that loses power."""
        self._signal(signal.SIGKILL)
        if self.popen is not None:
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired as error:
                raise BedError(f"{self.name} did not die") from error
        self.paused = False

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None


def wait_listening(node: Node, port: int, what: str, seconds: float = 90, process: Process | None = None) -> None:
    """Until `node:port` takes a connection (asked from inside the node's namespace, where the
    address is reachable)."""
    probe = f"import socket; socket.create_connection(({node.address!r}, {port}), timeout=1).close()"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and not process.alive:
            raise BedError(f"{what} exited: see {process.log}")
        done = subprocess.run(node.command([sys.executable, "-c", probe]), capture_output=True, timeout=30, check=False)
        if done.returncode == 0:
            return
        time.sleep(0.3)
    raise BedError(f"{what} did not listen on {node.address}:{port} within {seconds:.0f} s")


class Deployment:
    """Every process of the bed, by name, started on its node."""

    def __init__(self, network: Network, directory: Path, *, serves: int, workers: int) -> None:
        self.network = network
        self.directory = directory
        self.serve_names = [f"serve-{number}" for number in range(1, serves + 1)]
        self.worker_names = [f"worker-{number}" for number in range(1, workers + 1)]
        self.processes: dict[str, Process] = {}
        self.lost_runs: Counter[str] = Counter()
        """The runs noted on the disks of hosts lost for good."""

    @staticmethod
    def node_names(serves: int, workers: int) -> list[str]:
        return [
            "postgres",
            "temporal",
            "backend",
            "tools",
            "client",
            *(f"serve-{n}" for n in range(1, serves + 1)),
            *(f"worker-{n}" for n in range(1, workers + 1)),
        ]

    def node(self, name: str) -> Node:
        return self.network.nodes[name]

    def url(self, name: str) -> str:
        ports = {"backend": BACKEND_PORT, "tools": TOOLS_PORT}
        return f"http://{self.node(name).address}:{ports.get(name, API_PORT)}"

    @property
    def database_url(self) -> str:
        return f"postgresql://postgres@{self.node('postgres').address}:{PG_PORT}/postgres"

    def _models_file(self) -> Path:
        return self.directory / "models.yaml"

    def _log(self, name: str) -> Path:
        return self.directory / "logs" / f"{name}.log"

    def start(self) -> Deployment:
        (self.directory / "logs").mkdir(parents=True, exist_ok=True)
        (self.directory / "history").mkdir(parents=True, exist_ok=True)
        upstream = {"api_base": f"{self.url('backend')}/v1", "api_key": "bed"}
        models = [
            {"model_name": name, "litellm_params": {"model": f"openai/{name}", "rpm": rpm} | upstream}
            for name, rpm in BUDGETS.items()
        ]
        models.append({"model_name": "*", "litellm_params": {"model": "openai/*"} | upstream})
        self._models_file().write_text(json.dumps({"model_list": models}))  # YAML reads JSON
        self._start_postgres()
        self._start_temporal()
        self._add(
            "backend",
            [sys.executable, "-m", "tests.support.scripted_backend", "--host", self.node("backend").address,
             "--port", str(BACKEND_PORT), "--rate-limit", "20", "--log", str(self.directory / "history" / "upstream.jsonl")],
        ).start()  # fmt: skip
        self._add(
            "tools",
            [sys.executable, "-m", "bench.cluster.tools_node", "--host", self.node("tools").address,
             "--port", str(TOOLS_PORT), "--calls", str(self.directory / "history" / "tool_calls.jsonl"),
             "--webhooks", str(self.directory / "history" / "webhooks.jsonl")],
        ).start()  # fmt: skip
        wait_listening(self.node("backend"), BACKEND_PORT, "the backend", process=self.processes["backend"])
        wait_listening(self.node("tools"), TOOLS_PORT, "the tools' server", process=self.processes["tools"])
        for name in self.worker_names:
            self._add(name, [self._cli(), "worker"], env=self._env(name)).start()
        for name in self.serve_names:
            serve = self._add(
                name,
                [self._cli(), "serve", "--host", self.node(name).address, "--port", str(API_PORT), "--open"],
                env=self._env(name),
            ).start()
            wait_listening(self.node(name), API_PORT, name, process=serve)
        return self

    def _cli(self) -> str:
        return str(Path(sys.executable).parent / "durable-responses")

    def _env(self, name: str) -> dict[str, str]:
        # Hosts of their own have uids of their own; on this one kernel, a range each.
        uids = {"SANDBOX_UIDS": _uids(name)} if name in self.worker_names else {}
        return uids | {
            "TEMPORAL_ADDRESS": f"{self.node('temporal').address}:{TEMPORAL_PORT}",
            "DATABASE_URL": self.database_url,
            "MODELS_FILE": str(self._models_file()),
            "SECRETS_KEY": SECRETS_KEY,
            "EGRESS_ALLOWLIST": f"{self.network.subnet}.0/24",
            "WEBHOOK_URLS": f"{self.url('tools')}/webhook",
            "WEBHOOK_SECRET": WEBHOOK_SECRET,
            "WORKFLOW_TASK_TIMEOUT_SECONDS": str(WORKFLOW_TASK_TIMEOUT_SECONDS),
            "SANDBOX_DIR": str(self._disk(name) / "containers"),
            # A command whose host is lost says so once no host has taken it for this long.
            "SANDBOX_HOST_WAIT_SECONDS": str(HOST_WAIT_SECONDS),
            "LOG_LEVEL": "WARNING",
        }

    def _add(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
        process = Process(name, self.node(name), argv, self._log(name), env or {})
        self.processes[name] = process
        return process

    def _start_postgres(self) -> None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            raise BedError("no PostgreSQL server binaries (Debian's `postgresql` package)")
        binaries = Path(found[-1]).parent
        disk = self.directory / "disks" / "postgres"
        disk.mkdir(parents=True)
        shutil.chown(disk, "postgres")
        data = disk / "data"
        as_postgres = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            [*as_postgres, str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"],
            check=True,
            capture_output=True,
            timeout=120,
        )
        with (data / "pg_hba.conf").open("a") as rules:
            rules.write(f"host all all {self.network.subnet}.0/24 trust\n")
        self._add(
            "postgres",
            [*as_postgres, str(binaries / "postgres"), "-D", str(data), "-p", str(PG_PORT), "-k", str(disk),
             "-c", f"listen_addresses={self.node('postgres').address}", "-c", "max_connections=300"],
        ).start()  # fmt: skip
        wait_listening(self.node("postgres"), PG_PORT, "PostgreSQL", process=self.processes["postgres"])

    def _start_temporal(self) -> None:
        disk = self.directory / "disks" / "temporal"
        disk.mkdir(parents=True)
        self._add(
            "temporal",
            [temporal_binary(), "server", "start-dev", "--ip", "0.0.0.0",  # its namespace has loopback and the bridge alone
             "--port", str(TEMPORAL_PORT), "--headless", "--db-filename", str(disk / "temporal.db"),
             "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal", "--log-level", "error",
             *dynamic_config_arguments(DEV_SERVER_CONFIG),
             *(argument for key in SEARCH_ATTRIBUTES for argument in ("--search-attribute", f"{key.name}=Keyword"))],
        ).start()  # fmt: skip
        wait_listening(self.node("temporal"), TEMPORAL_PORT, "Temporal", process=self.processes["temporal"])

    def restart(self, name: str, *, wait: bool = True) -> None:
        """Killed (if alive) and started again on the same disk."""
        process = self.processes[name]
        process.kill()
        process.start()
        if wait and name in ("postgres", "temporal", *self.serve_names):
            port = {"postgres": PG_PORT, "temporal": TEMPORAL_PORT}.get(name, API_PORT)
            wait_listening(process.node, port, name, process=process)

    def _disk(self, name: str) -> Path:
        return self.directory / "disks" / name

    def lose_host(self, name: str) -> None:
        """A worker's host lost for good: the worker and its containers' processes killed, its
        disk gone (kept aside, where `command_runs` still counts what ran there). `restart`
        brings a new host up in its place, on an empty disk: a host of another id."""
        self.processes[name].kill()
        disk = self._disk(name)
        if disk.exists():
            asyncio.run(_remove_containers(disk / "containers", _uids(name), self.lost_runs))
            disk.rename(disk.with_name(f"{name}.lost-{len(list(disk.parent.glob(f'{name}.lost-*'))) + 1}"))

    def command_runs(self) -> Counter[str]:
        """How often each command of the workload ran, as the containers of every host noted
        it (one line a run, naming its operation), those of lost hosts included."""
        runs = Counter(self.lost_runs)
        for name in self.worker_names:
            runs.update(_runs_noted(self._disk(name) / "containers"))
        return runs

    def stop(self) -> None:
        for process in reversed(list(self.processes.values())):
            process.resume()
            process.kill()
        for name in self.worker_names:
            if self._disk(name).exists():
                asyncio.run(_remove_containers(self._disk(name) / "containers", _uids(name), Counter()))
        left = [
            line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if str(self.directory) in line
        ]
        for mounted in left:
            subprocess.run(["umount", "-l", mounted], capture_output=True, check=False)
        if left:
            raise BedError(f"the bed's teardown left {len(left)} mounts of its containers (now unmounted)")


def _runs_noted(containers: Path) -> Counter[str]:
    runs: Counter[str] = Counter()
    for noted in containers.glob(f"*/data/{RUNS_FILE.removeprefix('/mnt/data/')}"):
        with contextlib.suppress(OSError):
            runs.update(line.strip() for line in noted.read_text(errors="replace").splitlines() if line.strip())
    return runs


def _uids(worker: str) -> str:
    """`SANDBOX_UIDS` for `worker-<n>`: 4096 uids of its own."""
    first = 1_879_048_192 + 4096 * int(worker.rsplit("-", 1)[1])
    return f"{first}-{first + 4095}"


async def _remove_containers(containers: Path, uids: str, runs: Counter[str]) -> None:
    """Every container of a host removed (its processes killed, its mounts and cgroups gone),
    once `runs` has counted what its commands noted."""
    runs.update(_runs_noted(containers))
    if not containers.is_dir():
        return
    try:
        host = ContainerHost.open(containers, uids=UidRange.parse(uids))
    except SandboxUnavailable:
        return  # no container could start here
    await remove_everything(host)
