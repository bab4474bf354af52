"""The system calls a sandbox may not make, as the BPF program bwrap loads (`--seccomp FD`).

Namespaces and capabilities already keep code inside from most of the kernel; this filter takes
away what is left of the kernel's surface that no computation needs and every escape of recent
years went through: new namespaces and mounts, keyrings, BPF, perf, userfaultfd, ptrace,
io_uring, modules, kexec, swap, reboot, the kernel log and the clocks. Each fails with EPERM,
as an unprivileged process expects of them. `clone3` fails with ENOSYS instead: its flags are
behind a pointer the filter cannot read, and glibc then falls back to `clone`, whose namespace
flags the filter does read. A call of another ABI than the host's own (32-bit calls on a 64-bit
host, x32) kills the process.

Built with libseccomp (`pyseccomp`, a ctypes binding of the library Debian ships), once a
host, and kept in its `SANDBOX_DIR` (`write`).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

DENIED = (
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
    "kcmp",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "acct",
    "quotactl",
    "lookup_dcookie",
    "vhangup",
    "iopl",
    "ioperm",
    "clock_settime",
    "clock_adjtime",
    "settimeofday",
    "adjtimex",
    "stime",
)
"""Denied with EPERM (a name this host's ABI does not have is left out)."""

NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
    "CLONE_NEWTIME": 0x00000080,
}
"""`clone` with any of these fails with EPERM (a plain fork or thread is `clone` without them)."""
FILTER_FILE = "seccomp.bpf"


class SeccompUnavailable(Exception):
    """libseccomp cannot be loaded here: no filter can be built."""


def program() -> bytes:
    """The filter, as the BPF program `--seccomp` takes."""
    try:
        import pyseccomp as seccomp  # loads libseccomp.so.2 as it is imported
    except (ImportError, OSError, RuntimeError) as error:
        raise SeccompUnavailable(f"libseccomp could not be loaded ({error}); Debian: libseccomp2") from None
    native = seccomp.system_arch()
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    denied = seccomp.ERRNO(errno.EPERM)
    for name in DENIED:
        if seccomp.resolve_syscall(native, name) < 0:
            continue
        rules.add_rule(denied, name)
    for flag in NAMESPACE_FLAGS.values():
        rules.add_rule(denied, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    if seccomp.resolve_syscall(native, "clone3") >= 0:
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    with open(os.memfd_create("seccomp"), "w+b") as buffer:
        rules.export_bpf(buffer)
        buffer.seek(0)
        return buffer.read()


def write(directory: Path) -> Path:
    """The filter, in `directory` (made again at every start: a newer server's rules win)."""
    path = directory / FILTER_FILE
    fresh = directory / f".{FILTER_FILE}.{os.getpid()}.tmp"
    fresh.write_bytes(program())
    os.chmod(fresh, 0o600)  # read by the launcher, as root, before it drops to the container's uid
    os.replace(fresh, path)
    return path
