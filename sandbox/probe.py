"""Whether this host can start a sandbox as a container's is started: an empty one, with the
seccomp filter, no user namespaces inside, and, when this process is root, as an unprivileged
uid (`sandbox/identity.py`). A kernel that gives no unprivileged user a user namespace
(`kernel.unprivileged_userns_clone=0`, `user.max_user_namespaces=0`, Ubuntu's AppArmor
restriction) fails it: code then does not run here at all, since bwrap would have to stay root.

Asked once a process (`refusal` is cached): a sandbox that starts takes ~10 ms.
"""

from __future__ import annotations

import functools
import os
import subprocess

from sandbox import seccomp, staging
from sandbox.bubblewrap import system
from sandbox.identity import Identity

PROBE_SECONDS = 30.0


@functools.cache
def refusal(bwrap: str, uid: int | None) -> str | None:
    """Why no sandbox can start here (as `uid`, when given); None: one did."""
    try:
        program = seccomp.program()
    except seccomp.SeccompUnavailable as error:
        return str(error)
    options = ["--unshare-all", "--unshare-user", "--disable-userns", *system()]
    rules = os.memfd_create("seccomp")
    try:
        os.write(rules, program)
        os.lseek(rules, 0, os.SEEK_SET)
        identity = None if uid is None else Identity(uid, uid)
        try:
            ran = subprocess.run(
                [bwrap, *options, "--seccomp", str(rules), "--", "/bin/true"],
                pass_fds=[rules],
                env={"PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                timeout=PROBE_SECONDS,
                check=False,
                preexec_fn=None if identity is None else (lambda: staging.become(identity)),  # noqa: PLW1509
            )
        except (OSError, subprocess.SubprocessError) as error:
            return f"bwrap did not run: {error}"
    finally:
        os.close(rules)
    if ran.returncode == 0:
        return None
    said = (ran.stderr.strip() or f"exit code {ran.returncode}")[:300]
    who = f"uid {uid}" if uid is not None else f"this process's uid {os.getuid()}"
    return (
        f"bwrap cannot start a sandbox as {who}: {said}; unprivileged user namespaces may be disabled "
        "(sysctl kernel.unprivileged_userns_clone or user.max_user_namespaces, or an AppArmor restriction)"
    )
