"""The walls of a sandboxed command, as bubblewrap's arguments.

Every command runs in namespaces of its own (user, PID, mount, network, IPC, UTS, cgroup), as
user 1000 inside with every capability dropped. Seen from the host it is never root: a worker
that is root starts bwrap as the container's own unprivileged uid (`sandbox/identity.py`,
`sandbox/staging.py`), so the kernel's owner checks (a `/proc/sys` file, the host's
`/dev/null`) see nobody in particular. It may not make user namespaces of its own
(`--disable-userns`), and a seccomp filter (`sandbox/seccomp.py`) takes away the kernel calls no
computation needs. `/proc/sys` is read-only. What it sees:

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

The options reach bwrap through a descriptor (`--args FD`, `Launch.options`), so the sandbox's
`/proc/1/cmdline` (bwrap's own) names none of the host's paths; the command follows them.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandbox.staging import staged

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
    """More host files, copied in read-only at the paths given (the interpreter's program)."""
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


@dataclass(frozen=True)
class Bind:
    """A host path bound into the sandbox: by its path when bwrap runs as the worker, from
    where the launcher staged it when bwrap runs as the container's uid (`sandbox/staging.py`)."""

    source: str
    inside: str
    writable: bool = False


@dataclass(frozen=True)
class Copy:
    """A small host file (the sandbox's `passwd`, the interpreter's program) copied into the
    sandbox, read-only: bwrap reads it from a descriptor the launcher opens
    (`--ro-bind-data`), so nothing inside (not `/proc/self/mountinfo`) shows where it lives
    on the host."""

    source: str
    inside: str


Step = str | Bind | Copy


@dataclass(frozen=True)
class Launch:
    """One sandboxed command as its launcher starts it: bwrap's options in order (mounts are
    made in the order given), and the command."""

    steps: tuple[Step, ...]
    command: tuple[str, ...]

    def sources(self) -> list[str]:
        return [step.source for step in self.steps if isinstance(step, Bind)]

    def copies(self) -> list[str]:
        return [step.source for step in self.steps if isinstance(step, Copy)]

    def options(self, *, staged_binds: bool, copied: Sequence[int] = ()) -> list[str]:
        """bwrap's options, each bind from its source or (`staged_binds`) from its staged place,
        each copy from its descriptor in `copied` (opened by the launcher, in order)."""
        options: list[str] = []
        binds = copies = 0
        for step in self.steps:
            if isinstance(step, str):
                options.append(step)
            elif isinstance(step, Copy):
                options += ["--ro-bind-data", str(copied[copies]), step.inside]
                copies += 1
            else:
                source = staged(binds) if staged_binds else step.source
                options += ["--bind" if step.writable else "--ro-bind", source, step.inside]
                binds += 1
        return options

    def to_json(self) -> dict[str, Any]:
        return {
            "steps": [
                step if isinstance(step, str) else {**vars(step), "kind": type(step).__name__.lower()}
                for step in self.steps
            ],
            "command": list(self.command),
        }

    @classmethod
    def from_json(cls, said: dict[str, Any]) -> Launch:
        kinds: dict[str, type[Bind] | type[Copy]] = {"bind": Bind, "copy": Copy}
        steps: list[Step] = []
        for step in said["steps"]:
            if isinstance(step, str):
                steps.append(step)
            else:
                fields = dict(step)
                steps.append(kinds[fields.pop("kind", "bind")](**fields))
        return cls(tuple(steps), tuple(said["command"]))


def system() -> list[str]:
    """`/usr`, read-only, and `/bin`, `/lib`, ... as the host has them: Debian's links into
    `/usr`, or directories of their own."""
    options = ["--ro-bind", "/usr", "/usr"]
    for link in MERGED_LINKS:
        target = Path("/") / link
        if target.is_symlink():
            options += ["--symlink", os.readlink(target), f"/{link}"]
        elif target.is_dir():
            options += ["--ro-bind", str(target), f"/{link}"]
    return options


def launch(walls: Walls, command: Sequence[str]) -> Launch:
    """What runs `command` behind `walls`."""
    steps: list[Step] = ["--unshare-all", "--unshare-user", "--disable-userns"]
    steps += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    # Its parent is the launcher (`sandbox/launcher.py`), not the worker: the sandbox outlives a
    # worker's death, and ends with its launcher (a cancel kills one or the other).
    steps += ["--cap-drop", "ALL", "--hostname", "sandbox", "--clearenv", "--die-with-parent"]
    steps += system()
    for name in ETC_FILES:
        steps += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    steps += [Copy(str(walls.etc_dir / "passwd"), "/etc/passwd"), Copy(str(walls.etc_dir / "group"), "/etc/group")]
    # The sandbox's own `/tmp`, `/proc` and `/dev` before the Python: bwrap mounts in order, and
    # a Python under one of them (a venv made with `mktemp -d`, as CI's is) would be hidden by a
    # filesystem mounted over it afterwards. `/proc/sys` read-only: bwrap leaves it writable
    # where its files' modes say so, and the kernel's owner checks are all that guard them then.
    steps += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys"]
    steps += ["--dev", "/dev"]
    steps += [Bind(path, path) for path in python_paths()]
    steps += [Copy(host, inside) for host, inside in walls.read_only.items()]
    steps.append(Bind(str(walls.data_dir), DATA_MOUNT, writable=True))
    if walls.control_dir is not None:
        steps.append(Bind(str(walls.control_dir), CONTROL_MOUNT, writable=True))
    if walls.egress_dir is not None:
        steps.append(Bind(str(walls.egress_dir), EGRESS_MOUNT))
    # The root bwrap builds (a tmpfs, with the mount points it made) is read-only too.
    steps += ["--remount-ro", "/", "--chdir", DATA_MOUNT]
    for name, value in {**BASE_ENVIRONMENT, **walls.environment}.items():
        steps += ["--setenv", name, value]
    return Launch(tuple(steps), tuple(command))
