"""A real PostgreSQL server for the tests: Debian's `postgresql` package's binaries, run as
the `postgres` user on a data directory and port of the test's own, with trust auth on
loopback. Where no server can be started (no binaries, no `postgres` user), the tests that
need one are skipped, saying why."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _still_running(data: Path) -> bool:
    """Whether a process of this server is left: each one works in its data directory."""
    for cwd in Path("/proc").glob("[0-9]*/cwd"):
        try:
            if cwd.readlink() == data:
                return True
        except OSError:
            continue
    return False


class PostgresServer:
    def __init__(self) -> None:
        self.binaries = _binaries()
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="dr-postgres-"))
        self.data = self.root / "data"

    @staticmethod
    def unavailable() -> str | None:
        """Why no server can be started here, or None."""
        if _binaries() is None:
            return "no PostgreSQL server binaries (install Debian's `postgresql` package)"
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                return "running as root and there is no `postgres` user to run the server as"
        return None

    def _as_owner(self, *command: str) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else list(command)

    def start(self) -> PostgresServer:
        assert self.binaries is not None
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        subprocess.run(
            self._as_owner(
                str(self.binaries / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )
        self._pg_ctl(
            "start",
            "-w",
            "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
        )
        return self

    def restart(self) -> None:
        self._pg_ctl(
            "restart",
            "-w",
            "-m",
            "fast",
            "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
        )

    def crash(self) -> None:
        """kill -9 of the postmaster, as a lost host does it: each backend ends its connection
        with "unexpected postmaster exit", whatever it was doing. Returns once none is left."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while _still_running(self.data) and time.monotonic() < deadline:
            time.sleep(0.05)
        # None of its processes is left, but the dead postmaster may wait as a zombie for its
        # reaper, and a new one refuses a lock file whose process still exists.
        for lock in [self.data / "postmaster.pid", *self.root.glob(".s.PGSQL.*")]:
            lock.unlink(missing_ok=True)

    def start_again(self) -> None:
        """After `crash`: the same data, the same port; the server recovers from its WAL."""
        self._pg_ctl(
            "start",
            "-w",
            "-o",
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200",
        )

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def _pg_ctl(self, *arguments: str) -> None:
        assert self.binaries is not None
        subprocess.run(
            self._as_owner(
                str(self.binaries / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "server.log"), *arguments
            ),
            check=True,
            capture_output=True,
            timeout=120,
        )

    def create_database(self) -> str:
        """A fresh, empty database; its URL."""
        assert self.binaries is not None
        name = f"test_{int(time.time() * 1e6)}"
        subprocess.run(
            self._as_owner(
                str(self.binaries / "createdb"), "-h", str(self.root), "-p", str(self.port), "-U", "postgres", name
            ),
            check=True,
            capture_output=True,
            timeout=60,
        )
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"
