"""The walls of a sandboxed command, as bubblewrap's arguments.

Every command runs in namespaces of its own (user, PID, mount, network, IPC, UTS, cgroup), as
an unprivileged user (uid 1000) with every capability dropped, also when the worker is root:
without a user namespace, bwrap run as root keeps CAP_SYS_ADMIN, and `mount -o remount,rw /`
then writes the host's files. What it sees:

- the system, read-only: `/usr` (and `/bin`, `/lib`, ... as Debian's links into it), the few
  files of `/etc` a program needs (certificates, alternatives, the dynamic linker's cache),
  a `passwd` naming its one user, and the Python that runs the server (its prefix, read-only,
  with numpy, pandas and matplotlib);
- `/mnt/data`, the container's files, writable; `/tmp`, a small tmpfs of its own;
- its own `/proc` (only its processes) and a minimal `/dev`;
- nothing of the server: not its data, its code, its environment (it starts from an empty
  one) or its secrets; no network (a loopback of its own).

Its PID namespace ends with it: when bwrap, or the launcher whose child it is, is killed, so
is every process inside, one that called `setsid` too.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_UID = 1000
DATA_MOUNT = "/mnt/data"
CONTROL_MOUNT = "/mnt/control"
PASSWD = "sandbox:x:1000:1000:sandbox:/mnt/data:/bin/sh\n"
GROUP = "sandbox:x:1000:\n"
ETC_FILES = ("ssl", "alternatives", "fonts", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types")
"""What of the host's `/etc` a program inside needs (certificates, Debian's alternatives links,
the linker's cache): never the whole of it."""
MERGED_LINKS = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")
BASE_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": DATA_MOUNT,
    "LANG": "C.UTF-8",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp/matplotlib",
    "XDG_CACHE_HOME": "/tmp/.cache",  # fontconfig's cache is not one of the container's files
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "TMPDIR": "/tmp",
}
TMP_BYTES = 64 * 1024 * 1024
EGRESS_MOUNT = "/mnt/egress"
PROXY_URL = "http://127.0.0.1:3128"
PROXY_ENVIRONMENT = {
    name: PROXY_URL for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY")
} | {"NO_PROXY": "127.0.0.1,::1", "no_proxy": "127.0.0.1,::1"}
"""Where programs inside find their way out (`sandbox/egress_forwarder.py`), when there is one."""


def bwrap_path() -> str | None:
    """Where the `bwrap` binary is (Debian's `bubblewrap` package), if it is installed."""
    return shutil.which("bwrap")


@dataclass(frozen=True)
class Walls:
    """One sandboxed command's view of the world."""

    data_dir: Path
    """The container's files: `/mnt/data` inside, writable."""
    etc_dir: Path
    """Where this container's `passwd` and `group` are (written by `write_etc`)."""
    control_dir: Path | None = None
    """Mounted at `/mnt/control`, writable (the container's interpreter's requests and runs)."""
    read_only: Mapping[str, str] = field(default_factory=dict)
    """More host paths, read-only, inside at the paths given (the interpreter's program)."""
    environment: Mapping[str, str] = field(default_factory=dict)
    egress_dir: Path | None = None
    """Where the container's egress proxy listens (`sandbox/egress_proxy.py`): `/mnt/egress`
    inside, read-only, when its `network_policy` allows a list of domains."""


def write_etc(etc_dir: Path) -> None:
    """The `passwd` and `group` the sandbox sees: its one user."""
    etc_dir.mkdir(parents=True, exist_ok=True)
    (etc_dir / "passwd").write_text(PASSWD)
    (etc_dir / "group").write_text(GROUP)


def python_paths() -> list[str]:
    """The server's Python, its standard library and its packages (a venv's and its base)."""
    paths = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(path for path in paths if path and not path.startswith("/usr"))


def argv(bwrap: str, walls: Walls, command: Sequence[str]) -> list[str]:
    """The command line that runs `command` behind `walls`."""
    args = [bwrap, "--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    # Its parent is the launcher (`sandbox/launcher.py`), not the worker: the sandbox outlives a
    # worker's death, and ends with its launcher (a cancel kills one or the other).
    args += ["--cap-drop", "ALL", "--hostname", "sandbox", "--clearenv", "--die-with-parent"]
    args += ["--ro-bind", "/usr", "/usr"]
    for link in MERGED_LINKS:
        target = Path("/") / link
        if target.is_symlink():
            args += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.is_dir():
            args += ["--ro-bind", str(target), f"/{link}"]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    args += ["--ro-bind", str(walls.etc_dir / "passwd"), "/etc/passwd"]
    args += ["--ro-bind", str(walls.etc_dir / "group"), "/etc/group"]
    # The sandbox's own `/tmp`, `/proc` and `/dev` before the Python: bwrap mounts in order, and
    # a Python under one of them (a venv made with `mktemp -d`, as CI's is) would be hidden by a
    # filesystem mounted over it afterwards.
    args += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--proc", "/proc", "--dev", "/dev"]
    for path in python_paths():
        args += ["--ro-bind", path, path]
    for host, inside in walls.read_only.items():
        args += ["--ro-bind", host, inside]
    args += ["--bind", str(walls.data_dir), DATA_MOUNT]
    if walls.control_dir is not None:
        args += ["--bind", str(walls.control_dir), CONTROL_MOUNT]
    if walls.egress_dir is not None:
        args += ["--ro-bind", str(walls.egress_dir), EGRESS_MOUNT]
    # The root bwrap builds (a tmpfs, with the mount points it made) is read-only too.
    args += ["--remount-ro", "/", "--chdir", DATA_MOUNT]
    for name, value in {**BASE_ENVIRONMENT, **walls.environment}.items():
        args += ["--setenv", name, value]
    return [*args, "--", *command]
