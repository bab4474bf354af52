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
from sandbox.bubblewrap import Launch
from sandbox.containers import ContainerHost, ContainerLimits, InterpreterEnded
from sandbox.run_spec import RunSpec
from sandbox.runs import Run
from tests.support.sandboxes import remove_everything

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
    await remove_everything(opened)


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


def run_spec_for(host: ContainerHost, container: str) -> RunSpec:
    return RunSpec(host.bwrap, Launch((), ("true",)), LIMITS.command(), 1)


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


# ---- the review of issue 59: a tenant's code is never the host's root ----------------------------


def sandboxed_pids(marker: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False).stdout.split()
    return [int(pid) for pid in found]


async def test_the_sandbox_is_nobody_on_the_host(host: ContainerHost):
    """Seen from the host, code inside runs as its container's own unprivileged uid; from inside,
    the kernel's owner checks refuse what host root could do (H1), no user namespace can be made
    (L7), and bwrap's command line names no host path (L5)."""
    container = container_id()
    await host.prepare(container, LIMITS)
    identity = host.identity(container)
    assert identity is not None and identity.uid not in (0, 1000)
    marker = f"sleep 8{uuid.uuid4().int % 1000:03d}"
    sleeping = asyncio.ensure_future(shell(host, container, marker, timeout=20))
    for _ in range(100):
        if sandboxed_pids(marker):
            break
        await asyncio.sleep(0.05)
    seen = sandboxed_pids(marker)
    assert seen, "the sandboxed command was not found from the host"
    for pid in seen:
        status = Path(f"/proc/{pid}/status").read_text()
        uids = next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1:]
        assert uids == [str(identity.uid)] * 4, status
    for run_dir in (host.directory(container) / "runs").iterdir():
        Run(run_dir).kill()
    await sleeping
    out, _, _ = await shell(
        host,
        container,
        "for path in /proc/sys/kernel/core_pattern /proc/sys/vm/swappiness; do "
        '  (echo x > $path) 2>/dev/null && echo "wrote $path" || echo "refused $path"; done; '
        "chmod 666 /dev/null 2>/dev/null && echo chmod-ok || echo chmod-refused; "
        "unshare -U true 2>/dev/null && echo userns-ok || echo userns-refused; "
        "unshare -Ur id 2>/dev/null || echo root-refused; "
        "tr '\\0' ' ' < /proc/1/cmdline; echo; echo mountinfo:; cat /proc/self/mountinfo; "
        "grep Seccomp: /proc/self/status",
    )
    assert "refused /proc/sys/kernel/core_pattern" in out and "refused /proc/sys/vm/swappiness" in out, out
    assert not any(line.startswith("wrote") for line in out.splitlines()) and "chmod-refused" in out, out
    assert "userns-refused" in out and "root-refused" in out and "uid=0" not in out, out
    cmdline = next(line for line in out.splitlines() if "bwrap" in line)
    assert str(host.root) not in cmdline and "--bind" not in cmdline and "--args" in cmdline, cmdline
    mountinfo = out.split("mountinfo:", 1)[1]
    assert str(host.root) not in mountinfo and container not in mountinfo, mountinfo  # no host path of its own
    assert "Seccomp:\t2" in out, out


async def test_each_denied_system_call_fails_with_eperm(host: ContainerHost):
    import pyseccomp

    from sandbox import seccomp

    native = pyseccomp.system_arch()
    numbers = {name: pyseccomp.resolve_syscall(native, name) for name in seccomp.DENIED}
    numbers = {name: number for name, number in numbers.items() if number >= 0}
    probe = textwrap.dedent(
        f"""
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for name, number in {numbers!r}.items():
            result = libc.syscall(ctypes.c_long(number), 0, 0, 0, 0, 0, 0)
            print(name, result, errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno()))
        print("getpid", libc.syscall(ctypes.c_long({pyseccomp.resolve_syscall(native, "getpid")})) > 0)
        clone3 = {pyseccomp.resolve_syscall(native, "clone3")}
        if clone3 >= 0:
            print("clone3", libc.syscall(ctypes.c_long(clone3), 0, 0), errno.errorcode.get(ctypes.get_errno()))
        """
    )
    container = container_id()
    await host.prepare(container, LIMITS)
    out, err, _ = await shell(host, container, f"python3 - <<'EOF'\n{probe}\nEOF")
    said = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip()}
    for name in numbers:
        assert said.get(name) == ["-1", "EPERM"], (name, said.get(name), err)
    # Without the filter these would not be EPERM: unshare(0) and ptrace(PTRACE_TRACEME) succeed.
    assert {"unshare", "ptrace", "keyctl", "io_uring_setup"} <= set(numbers)
    assert said["getpid"] == ["True"], said
    if "clone3" in said:
        assert said["clone3"] == ["-1", "ENOSYS"], said["clone3"]


async def test_a_recorded_pid_that_is_now_another_process_is_never_killed(host: ContainerHost):
    """A run's recorded pids, its proxy's, once their processes are gone, may be any process of
    the host's: removing the container kills none of them (H3)."""
    container = container_id()
    await host.prepare(container, LIMITS)
    _, _, run = await shell(host, container, "true")
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        home = host.directory(container)
        (run.directory / "child.pid").write_text(f"{bystander.pid} 1")  # its pid, another start time
        (run.directory / "launcher.pid").write_text(str(bystander.pid))  # a bare pid, as before
        (home / "egress-proxy.pid").write_text(str(bystander.pid))
        await host.remove(container)
        assert bystander.poll() is None, "a host process was killed for a pid a container once had"
    finally:
        bystander.kill()
        bystander.wait()


async def test_a_launcher_serves_from_beside_its_container_and_survives_its_oom(host: ContainerHost):
    """The launcher is counted against its container, out of its code's cgroup: the code's OOM
    kills the code, and the launcher lives to say so (M6)."""
    if host.cgroups is None:
        pytest.skip("no cgroups here")
    container = container_id()
    await host.prepare(container, LIMITS)
    cgroup = host.cgroup(container)
    assert cgroup is not None
    run = await host.start_shell(container, "oom", 0, "sleep 0.5; python3 -c 'x = bytearray(1 << 30)'", 30, LIMITS)
    await asyncio.sleep(0.2)
    launcher = int((run.directory / "launcher.pid").read_text().split()[0])
    child = int((run.directory / "child.pid").read_text().split()[0])
    assert launcher in cgroup.service.pids() and launcher not in cgroup.tenant.pids()
    assert child in cgroup.commands.pids()
    async for _ in run.follow({}):
        pass
    outcome = run.outcome()
    assert outcome is not None and outcome.out_of_memory and not outcome.lost, outcome


async def test_what_a_call_leaves_running_does_not_run_between_calls(host: ContainerHost):
    """A daemon thread and a background process started by one call are frozen with the
    interpreter once the call has answered, and go on only while a call runs (M6)."""
    if host.cgroups is None or host.cgroups.freezer is None:
        pytest.skip("no freezer here")
    container = container_id()
    await host.prepare(container, LIMITS)
    interpreters, _ = await host.start_interpreter(container, LIMITS)
    leaving = textwrap.dedent(
        """
        import subprocess, threading, time
        def tick():
            while True:
                with open("/mnt/data/thread", "a") as f:
                    f.write("x")
                time.sleep(0.02)
        threading.Thread(target=tick, daemon=True).start()
        subprocess.Popen(["sh", "-c", "while :; do printf x >> /mnt/data/process; sleep 0.02; done"])
        time.sleep(0.3)
        """
    )
    interpreters.submit(1, "leaving", leaving)
    for _ in range(200):
        if interpreters.status("leaving") is not None:
            break
        await asyncio.sleep(0.05)
    assert interpreters.status("leaving") is not None
    host.freeze_interpreter(container)
    data = host.data(container)
    sizes = [(data / "thread").stat().st_size, (data / "process").stat().st_size]
    await asyncio.sleep(1.0)
    assert [(data / "thread").stat().st_size, (data / "process").stat().st_size] == sizes, "code ran between calls"
    assert not host.busy(container)
    host.thaw_interpreter(container)
    interpreters.submit(2, "next", "import time; time.sleep(0.3)")
    for _ in range(200):
        if interpreters.status("next") is not None:
            break
        await asyncio.sleep(0.05)
    assert (data / "thread").stat().st_size > sizes[0], "the thread goes on while a call runs"


async def test_command_output_lives_on_the_containers_quota_and_is_pruned(host: ContainerHost):
    """Each run's output is on the container's own output disk, the oldest runs' pruned: what the
    host keeps on its own disk for a run is a few small files (M7)."""
    from sandbox.containers import KEPT_RUN_OUTPUTS

    container = container_id()
    await host.prepare(container, LIMITS)
    for index in range(KEPT_RUN_OUTPUTS + 8):
        await shell(host, container, f"head -c 400000 /dev/zero | tr '\\0' '{index % 10}'")
    home = host.directory(container)
    assert len(list((home / "outputs").iterdir())) <= KEPT_RUN_OUTPUTS + 1
    on_disk = sum(path.stat().st_size for path in (home / "runs").rglob("*") if path.is_file())
    assert on_disk < 64 * 1024 * (KEPT_RUN_OUTPUTS + 8) // 16, on_disk
    if os.path.ismount(home / "outputs"):
        assert os.statvfs(home / "outputs").f_blocks * os.statvfs(home / "outputs").f_frsize <= 64 * MiB


async def test_a_container_made_before_it_had_a_uid_is_given_one(host: ContainerHost):
    """A container from before this change (its files root's, no identity) is migrated on its next
    command: its files become its uid's, and its code runs as that uid."""
    from sandbox.containers import _mount_tmpfs

    container = container_id()
    home = host.directory(container)
    (home / "data").mkdir(parents=True)
    _mount_tmpfs(home / "data", 32 * MiB, None, "")  # as it was mounted then: root's
    (home / "data" / "old.txt").write_text("from before")
    os.chmod(home / "data" / "old.txt", 0o644)
    await host.prepare(container, LIMITS)
    identity = host.identity(container)
    assert identity is not None
    assert (home / "data" / "old.txt").stat().st_uid == identity.uid
    out, err, _ = await shell(host, container, "echo more >> /mnt/data/old.txt && cat /mnt/data/old.txt && id -u")
    assert out.split() == ["from", "beforemore", "1000"], (out, err)


def test_a_root_that_may_make_no_user_namespace_runs_no_code(tmp_path: Path):
    """Root in a user namespace of its own (holding root and the uids of `SANDBOX_UIDS`) where no
    further user namespace may be made, as on a kernel that disables them for unprivileged users:
    code execution is off and the start-up line says why, and `SANDBOX_RUNTIME=bubblewrap` is a
    start-up error; bwrap is never run as root instead."""
    from sandbox.identity import DEFAULT_UIDS

    first, last = (int(part) for part in DEFAULT_UIDS.split("-"))
    script = textwrap.dedent(
        """
        import ctypes, os, sys
        if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:
            print("skip: no user namespace"); sys.exit()
        print("ready", flush=True)
        sys.stdin.readline()  # the parent has written our uid and gid maps
        os.setresgid(0, 0, 0); os.setresuid(0, 0, 0)
        with open("/proc/sys/user/max_user_namespaces", "w") as limit:
            limit.write("0")
        from sandbox.settings import SandboxSettings, SandboxSettingError
        try:
            settings = SandboxSettings.from_env()
        except SandboxSettingError as error:
            print("error:", error)
        else:
            print(settings.runtime, "|", settings.described())
        """
    )
    root = Path(__file__).resolve().parents[2]
    results = {}
    for runtime in ("", "bubblewrap"):
        child = subprocess.Popen(
            [sys.executable, "-c", script],
            env={**os.environ, "SANDBOX_RUNTIME": runtime, "PYTHONPATH": str(root)},
            cwd=tmp_path,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdin is not None and child.stdout is not None
        said = child.stdout.readline()
        if said.startswith("skip"):
            child.wait()
            pytest.skip("no user namespaces here")
        maps = f"0 0 1\n{first} {first} {last - first + 1}\n"
        Path(f"/proc/{child.pid}/uid_map").write_text(maps)
        Path(f"/proc/{child.pid}/gid_map").write_text(maps)
        out, err = child.communicate("go\n", timeout=60)
        results[runtime] = out.strip() or err
    assert results[""].startswith("off | code execution: off, this host cannot sandbox code"), results[""]
    assert f"as uid {first}" in results[""] and "Creating new namespace failed" in results[""], results[""]
    assert results["bubblewrap"].startswith("error: SANDBOX_RUNTIME=bubblewrap, but this host cannot sandbox code"), (
        results["bubblewrap"]
    )


async def test_what_code_writes_in_mnt_control_keeps_nothing_busy_and_breaks_no_chore(host: ContainerHost):
    """The review of this change (F1): a name in `requests/` the interpreter never takes kept the
    container busy and its interpreter thawed for good; one in `taken/` made every later chore
    of the host fail. What the worker decides on is its own record, out of the sandbox's reach."""
    container = container_id()
    await host.prepare(container, LIMITS)
    interpreters, _ = await host.start_interpreter(container, LIMITS)
    planting = (
        "open('/mnt/control/requests/hold', 'w').write('x')\n"
        "open('/mnt/control/taken/x-..', 'w').write('x')\n"
        "open('/mnt/control/runs/..%s' % 'x', 'w').write('x')"
    )
    interpreters.submit(1, "planting", planting)
    for _ in range(200):
        if interpreters.status("planting") is not None:
            break
        await asyncio.sleep(0.05)
    assert interpreters.status("planting") is not None and interpreters.status("planting").error is None
    assert not interpreters.waiting() and not host.busy(container)
    interpreters.prune(keep=0)  # names the sandbox made are read as hostile, never trusted as paths
    host.freeze_interpreter(container)
    if host.cgroups is not None and host.cgroups.freezer is not None:
        assert host.interpreter_frozen(container)
    (host.directory(container) / "control" / "runs" / "deep").mkdir()
    (host.directory(container) / "control" / "runs" / "deep" / "status.json").write_text("[" * 60_000)
    assert interpreters.status("deep") is not None  # unreadable, said so: no RecursionError


def test_a_tree_deeper_than_a_walk_goes_is_walked_to_its_bound(tmp_path: Path):
    """F5: 1,200 nested directories made the walk of a container's files fail for good."""
    from activities.container_files import _regular_files
    from sandbox.reach import MAX_DEPTH, remove_tree

    deep = tmp_path / "data"
    (deep / "near").mkdir(parents=True)
    (deep / "near" / "kept.txt").write_text("x")
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(1200):  # deeper than a path may name: made a level at a time
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(os.open("too-deep.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)
    try:
        found, _ = _regular_files(deep)
    finally:
        remove_tree(deep)
    assert "/mnt/data/near/kept.txt" in found and not any(name.endswith("too-deep.txt") for name in found)
    assert MAX_DEPTH < 1200 and not deep.exists()
