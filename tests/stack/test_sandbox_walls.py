"""The walls of a container, proved as root (the workers run as root in `dev` and in CI): code
inside cannot read the server's environment or another process's, write outside `/mnt/data`,
remount anything, hold a capability, reach the network or another container's files, or see
the host's processes; a fork bomb in one container does not stop another from starting, a
container asking for 4 GB of its 256 MB is stopped, filling its disk is a full disk, printing
a gigabyte keeps a bounded part; each ends with a clear outcome, and the host carries on. A
command outlives the process that started it and is read once it ends. Real bubblewrap,
real cgroups; no server."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandbox import bubblewrap
from sandbox.containers import ContainerHost, ContainerLimits, InterpreterEnded
from sandbox.runs import Run

pytestmark = pytest.mark.skipif(
    bubblewrap.bwrap_path() is None or os.geteuid() != 0, reason="needs bubblewrap, run as root (as CI runs)"
)
MiB = 1024 * 1024
LIMITS = ContainerLimits(memory_bytes=256 * MiB, disk_bytes=32 * MiB, max_processes=64, output_bytes=1 * MiB)


def container_id() -> str:
    return f"cntr_{uuid.uuid4().hex}"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[ContainerHost]:
    opened = ContainerHost.open(tmp_path / "containers")
    yield opened
    for each in opened.containers():
        await opened.remove(each)


async def shell(host: ContainerHost, container: str, command: str, timeout: float = 30) -> tuple[str, str, Run]:
    run = await host.start_shell(container, uuid.uuid4().hex, 0, command, timeout, LIMITS)
    out: dict[str, bytes] = {"stdout": b"", "stderr": b""}
    async for stream, data in run.follow({}):
        out[stream] += data
    return out["stdout"].decode(errors="replace"), out["stderr"].decode(errors="replace"), run


async def test_nothing_of_the_server_is_inside(host: ContainerHost, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("SERVER_SECRET_FOR_THE_TEST", "never-inside")
    container = container_id()
    await host.prepare(container, LIMITS)
    out, _, run = await shell(
        host,
        container,
        "id -u; env; cat /proc/1/environ | tr '\\0' '\\n'; ls /proc | grep -c '^[0-9]'; "
        f"ls {host.root} {Path.cwd()} /root 2>&1; grep CapEff /proc/self/status",
    )
    assert run.outcome().exit_code == 0
    assert out.splitlines()[0] == "1000"
    assert "never-inside" not in out and "SECRETS_KEY" not in out
    assert "CapEff:\t0000000000000000" in out
    # The server's Python is bound in, read-only, at its own paths (`sandbox/bubblewrap.py`): a
    # Python or venv under one of these folders (`python -m venv .venv` in the server's folder,
    # then the README's install; a Python built under /root) is the one thing of it inside.
    for hidden in (host.root, Path.cwd(), Path("/root")):  # the containers, the server's code, root's home
        given = {
            Path(path).relative_to(hidden).parts[0]
            for path in bubblewrap.python_paths()
            if Path(path).is_relative_to(hidden)
        }
        if given:
            listed, _, _ = await shell(host, container, f"ls -A {hidden}")
            assert set(listed.split()) == given, (hidden, given, listed)
        else:
            assert f"'{hidden}': No such file or directory" in out, (hidden, out)
    processes = int([line for line in out.splitlines() if line.isdigit()][1])
    assert processes <= 6, "host processes are visible"


async def test_nothing_outside_mnt_data_can_be_written_or_remounted(host: ContainerHost):
    container = container_id()
    await host.prepare(container, LIMITS)
    out, _, _ = await shell(
        host,
        container,
        "for path in /usr/x /etc/x /x /opt/x; do touch $path 2>/dev/null && echo wrote $path; done; "
        "mount -o remount,rw / 2>&1 | head -1; mount -o remount,rw /usr 2>&1 | head -1; "
        "echo hi > /mnt/data/ok && cat /mnt/data/ok",
    )
    assert "wrote" not in out, out
    assert "must be superuser" in out or "permission denied" in out.lower(), out
    assert out.strip().endswith("hi")


async def test_no_network_and_no_other_containers_files(host: ContainerHost):
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    port = listening.getsockname()[1]
    first, second = container_id(), container_id()
    await host.prepare(first, LIMITS)
    await host.prepare(second, LIMITS)
    (host.data(second) / "private.txt").write_text("the other container's")
    try:
        out, _, _ = await shell(
            host,
            first,
            f"python3 - <<'EOF'\nimport socket\nfor target in [('127.0.0.1', {port}), ('1.1.1.1', 53)]:\n"
            "    try:\n        socket.create_connection(target, timeout=2); print('reached', target)\n"
            "    except OSError as error: print('refused', type(error).__name__)\nEOF\n"
            "getent hosts example.com || echo no-dns; ls /mnt/data; find / -name private.txt 2>/dev/null",
        )
    finally:
        listening.close()
    assert "reached" not in out and out.count("refused") == 2 and "no-dns" in out, out
    assert "private.txt" not in out


async def test_a_fork_bomb_stops_neither_the_host_nor_another_container(host: ContainerHost):
    bombed, other = container_id(), container_id()
    await host.prepare(bombed, LIMITS)
    await host.prepare(other, LIMITS)
    bomb = asyncio.ensure_future(shell(host, bombed, "bomb() { bomb | bomb & }; bomb; sleep 30", timeout=4))
    await asyncio.sleep(1)
    began = time.monotonic()
    out, _, run = await shell(host, other, "echo still fine")
    assert out.strip() == "still fine" and run.outcome().exit_code == 0
    assert time.monotonic() - began < 5
    _, _, bombed_run = await bomb
    assert bombed_run.outcome().timed_out
    assert subprocess.run(["true"], check=False).returncode == 0  # the host still forks


async def test_memory_past_the_limit_is_stopped_and_said(host: ContainerHost):
    container = container_id()
    await host.prepare(container, LIMITS)
    _, _, run = await shell(host, container, "python3 -c 'x = bytearray(4 * 1024**3)'")
    outcome = run.outcome()
    assert outcome.out_of_memory or outcome.exit_code not in (0, None), outcome


async def test_a_full_disk_is_a_full_disk(host: ContainerHost):
    container = container_id()
    await host.prepare(container, LIMITS)
    _, err, run = await shell(host, container, "head -c 200000000 /dev/zero > /mnt/data/big")
    assert "No space left on device" in err and run.outcome().exit_code != 0
    out, _, _ = await shell(host, container, "rm /mnt/data/big && echo room again")
    assert out.strip() == "room again"


async def test_a_gigabyte_printed_keeps_a_bounded_part(host: ContainerHost):
    container = container_id()
    await host.prepare(container, LIMITS)
    out, _, run = await shell(host, container, "yes 0123456789 | head -c 1073741824")
    outcome = run.outcome()
    assert outcome.exit_code == 0 and outcome.stdout_bytes == 1 << 30
    assert len(out) <= LIMITS.output_bytes


async def test_a_timed_out_command_ends_with_everything_it_started(host: ContainerHost):
    container = container_id()
    await host.prepare(container, LIMITS)
    marker = f"sleep 7{uuid.uuid4().int % 1000:03d}"
    _, _, run = await shell(host, container, f"setsid {marker} & nohup {marker} & {marker}", timeout=1)
    assert run.outcome().timed_out
    await asyncio.sleep(0.3)
    alive = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False).stdout
    assert alive == "", "a process of the sandbox outlived it"


async def test_a_command_outlives_the_process_that_started_it_and_is_read_once(host: ContainerHost, tmp_path: Path):
    """As a worker killed with SIGKILL mid-command: its launcher goes on, and the retried
    activity (here: this process) finds the run, follows it to its end, and reads its status."""
    container = container_id()
    await host.prepare(container, LIMITS)
    starter = textwrap.dedent(
        f"""
        import asyncio, os, signal
        from pathlib import Path
        from sandbox.containers import ContainerHost, ContainerLimits
        async def main():
            host = ContainerHost(Path({str(host.root)!r}), cgroups=None)
            await host.start_shell({container!r}, "durable", 0, "for i in 1 2 3; do echo $i; sleep 1; done", 30,
                                   ContainerLimits())
            os.kill(os.getpid(), signal.SIGKILL)
        asyncio.run(main())
        """
    )
    killed = subprocess.run([sys.executable, "-c", starter], cwd=Path(__file__).resolve().parents[2], check=False)
    assert killed.returncode == -signal.SIGKILL
    run = host.shell_run(container, "durable", 0)
    assert run.started and run.outcome() is None, "the command died with its starter"
    assert not await run.start(run_spec_for(host, container)), "a retried start must not run it again"
    out = b""
    async for stream, data in run.follow({}):
        out += data if stream == "stdout" else b""
    assert out.split() == [b"1", b"2", b"3"] and run.outcome().exit_code == 0


def run_spec_for(host: ContainerHost, container: str):  # noqa: ANN201
    from sandbox.runs import RunSpec

    return RunSpec(["true"], LIMITS.command(), 1)


async def test_a_python_under_tmp_is_seen_inside(host: ContainerHost, tmp_path: Path):
    """The server's Python is bound into every sandbox; a venv under `/tmp` (as CI makes one with
    `mktemp -d`) must not be hidden by the sandbox's own `/tmp`."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    # This project and this process's packages, so the venv's Python can run the host (its
    # launcher, started with `-P`, finds the project on the path, not in the working directory).
    root = str(Path(__file__).resolve().parents[2])
    (venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / "server.pth").write_text(
        "\n".join([root, *sys.path[1:]]) + "\n"
    )
    container = container_id()
    await host.prepare(container, LIMITS)
    starter = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path
        from sandbox.containers import ContainerHost, ContainerLimits
        async def main():
            host = ContainerHost(Path({str(host.root)!r}), cgroups=None)
            run = await host.start_shell({container!r}, "venv", 0, sys.executable + " -c 'import sys; print(sys.prefix)'",
                                         30, ContainerLimits())
            async for stream, data in run.follow({{}}):
                sys.stdout.write(data.decode())
        asyncio.run(main())
        """
    )
    ran = subprocess.run(
        [str(venv / "bin" / "python"), "-c", starter],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == str(venv), ran.stdout


async def test_an_interpreter_that_cannot_start_ends_at_once_and_says_why(host: ContainerHost):
    """A container whose memory cannot hold a Python: the interpreter ends before it is up, which
    starting it again would not mend (the activity fails the call without retrying it)."""
    if host.cgroups is None:
        pytest.skip("no cgroups here: a container's memory is not bounded")
    container = container_id()
    tiny = ContainerLimits(memory_bytes=4 * MiB, disk_bytes=32 * MiB, max_processes=64, output_bytes=1 * MiB)
    await host.prepare(container, tiny)
    with pytest.raises(InterpreterEnded) as ended:  # ended, not "not up in time"
        await host.start_interpreter(container, tiny)
    assert ended.value.out_of_memory
