"""How a launcher that is root hands an unprivileged bwrap what it binds, then becomes the
container's uid (`sandbox/identity.py`). Run in the launcher's child, between `fork` and
`exec` (the launcher has one thread), after it joined its cgroup and took on its rlimits.

bwrap run by an unprivileged uid may bind only what that uid can reach by path, and the
server's Python (`/root/.pyenv/...`, a venv made with `mktemp -d`) or the container's own
directory (under a `SANDBOX_DIR` only root may enter) is not. bwrap's `--bind-fd` does not help:
it resolves the descriptor back to its path. So the child takes a mount namespace of its own
(private: nothing it mounts is seen by the host), binds each source onto a small tmpfs at
`STAGE` that every uid may traverse, and bwrap binds them from there. When the sandbox ends, so
does the namespace and everything mounted in it.

Then it drops its supplementary groups, its gid and its uid, in that order (a uid dropped first
could not drop the rest), and checks that it cannot take root back.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence

from sandbox.identity import Identity

STAGE = "/tmp"
"""Where the sources are bound, in the child's own mount namespace (a tmpfs over the host's
`/tmp` there, so nothing of the host's `/tmp` is reachable through it)."""
STAGE_BYTES = 1024 * 1024
CLONE_NEWNS = 0x00020000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000

_libc = ctypes.CDLL(None, use_errno=True)  # loaded before any fork: nothing is loaded in the child


def staged(index: int) -> str:
    """Where the `index`th source is bound for bwrap."""
    return f"{STAGE}/{index}"


def _check(result: int, doing: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{doing}: {os.strerror(code)}")


def stage(sources: Sequence[str]) -> None:
    """Each source bound at `staged(i)`, in a mount namespace of this process's own."""
    _check(_libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    # Opened in this namespace (a descriptor of the host's namespace cannot be bound here) and
    # before the tmpfs goes over `STAGE` (a source may lie under it).
    opened = [os.open(source, os.O_PATH | os.O_CLOEXEC) for source in sources]
    try:
        options = f"mode=0755,size={STAGE_BYTES}".encode()
        _check(_libc.mount(b"tmpfs", STAGE.encode(), b"tmpfs", 0, options), f"mount a tmpfs at {STAGE}")
        for index, fd in enumerate(opened):
            target = staged(index)
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.mkdir(target, 0o755)
            else:
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            _check(
                _libc.mount(f"/proc/self/fd/{fd}".encode(), target.encode(), None, MS_BIND | MS_REC, None),
                f"bind {sources[index]}",
            )
    finally:
        for fd in opened:
            os.close(fd)


def become(identity: Identity) -> None:
    """Drop to `identity` for good."""
    os.setgroups([])
    os.setresgid(identity.gid, identity.gid, identity.gid)
    os.setresuid(identity.uid, identity.uid, identity.uid)
    if os.getuid() != identity.uid or os.geteuid() != identity.uid:
        raise OSError(f"still uid {os.geteuid()} after dropping to {identity.uid}")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise OSError("root could be taken back after dropping privileges")
