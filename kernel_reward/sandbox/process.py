"""Child side, last layers: a clean environment (an explicit allow-list), the privilege drop, resource limits."""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
from collections.abc import Iterable, Mapping

from kernel_reward.sandbox.namespaces import set_parent_death_signal
from kernel_reward.sandbox.policy import (
    Isolation,
    SandboxLimits,
    SandboxPolicy,
    check_call,
    enforce_required,
    load_libc,
)


def clean_environment(allow: Iterable[str], set_vars: Mapping[str, str]) -> list[str]:
    """Drop every environment variable except those named in ``allow`` (usually ``ENV_ALLOW_LIST``), then set
    ``set_vars`` (the child's HOME, TMPDIR, TRITON_CACHE_DIR...). Returns the names of the inherited variables
    kept (for ``isolation.env_kept``; names only, never values), sorted.

    Goes through ``os.environ`` (which updates the C library's environment, what subprocesses get) and then
    clears the C environment too, for variables set behind Python's back. The block the process was exec'd with
    (what /proc/self/environ shows, readable by the candidate from its own memory) is overwritten except for the
    kept entries. Copies the interpreter made earlier and freed may linger in its heap: the service should start
    the processes it forks children from with a clean environment too.
    """
    allowed = set(allow) - set(set_vars)
    kept = {name: os.environ[name] for name in sorted(allowed) if name in os.environ}
    for name in list(os.environ):
        with contextlib.suppress(OSError, ValueError):  # a name the C library refuses (""): clearenv drops it
            del os.environ[name]
    check_call(load_libc().clearenv(), "clearenv")
    os.environ.update(kept)
    os.environ.update(set_vars)
    _scrub_exec_environment(set(kept))
    return list(kept)


def _scrub_exec_environment(keep: set[str]) -> None:
    """Zero the entries of the environment block this process was exec'd with, except those named in ``keep``."""
    with open("/proc/self/stat", "rb") as f:
        data = f.read()
    fields = data[
        data.rindex(b")") + 2 :
    ].split()  # fields from 3 on: env_start, env_end are fields 50 and 51
    start, end = int(fields[47]), int(fields[48])
    if not 0 < start < end:
        return
    block = ctypes.string_at(start, end - start)
    offset = 0
    for entry in block.split(b"\0"):
        if entry and os.fsdecode(entry.split(b"=", 1)[0]) not in keep:
            ctypes.memset(start + offset, 0, len(entry))
        offset += len(entry) + 1


def drop_privileges(policy: SandboxPolicy, isolation: Isolation, uid: int | None) -> None:
    """Switch to ``uid`` (and the same gid, no supplementary groups) when running as root."""
    if not policy.drop_privileges:
        pass
    elif os.geteuid() != 0:
        isolation.missing.append("uid_drop: not running as root (the candidate keeps the service's own uid)")
    elif uid is None:
        isolation.missing.append("uid_drop: no uid assigned")
    else:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        isolation.uid = uid
        set_parent_death_signal()  # the kernel clears it on a credential change
    # Also the check for the layers that take no policy (make_filesystem_read_only, clean_environment), applied before.
    enforce_required(policy, isolation)


def apply_rlimits(limits: SandboxLimits, isolation: Isolation, *, address_space: bool) -> None:
    """Set the hard and soft limits of the calling process (only lowering is possible, so this is final).

    CPU seconds are counted from now (the warm-up already spent some). The address-space limit is added on top of
    the current mapping size and only applied when ``address_space`` is true: CUDA reserves terabytes of virtual
    address space, so on a GPU the parent's resident-set watchdog stands in for it.
    """
    applied: dict[str, int | None] = {}

    def setlimit(name: str, which: int, value: int | None) -> None:
        if value is None:
            applied[name] = None
            return
        try:
            resource.setrlimit(which, (value, value))
            applied[name] = value
        except (ValueError, OSError) as exc:
            isolation.missing.append(f"rlimit {name}: {exc}")

    if limits.cpu_seconds is not None:
        used = resource.getrusage(resource.RUSAGE_SELF)
        setlimit(
            "cpu_seconds", resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime) + 1 + limits.cpu_seconds
        )
    else:
        applied["cpu_seconds"] = None
    if address_space and limits.address_space_bytes is not None:
        setlimit("address_space_bytes", resource.RLIMIT_AS, _mapped_bytes() + limits.address_space_bytes)
    else:
        applied["address_space_bytes"] = None
    setlimit("open_files", resource.RLIMIT_NOFILE, limits.open_files)
    if isolation.uid is not None:
        setlimit("processes", resource.RLIMIT_NPROC, limits.processes)
    else:  # RLIMIT_NPROC counts every process of the uid: shared with the service's own processes, it would misfire
        applied["processes"] = None
        if limits.processes is not None:
            isolation.missing.append("rlimit processes: no private uid, so no per-candidate process limit")
    setlimit("file_size_bytes", resource.RLIMIT_FSIZE, limits.file_size_bytes)
    setlimit("core_bytes", resource.RLIMIT_CORE, 0)
    # An over-long write then fails with EFBIG (an exception the candidate sees) instead of killing the process.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    isolation.rlimits = applied


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
