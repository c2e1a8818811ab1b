"""Child side: the process becomes pid 1 of a new pid namespace with a /proc of its own; the caller stays behind
as a reaper that forwards signals and exits with the child's status."""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
from typing import NoReturn

from kernel_reward.sandbox.filesystem import (
    is_under,
    mountinfo,
    open_mount_root,
    outermost,
    remount_read_only,
)
from kernel_reward.sandbox.namespaces import set_parent_death_signal
from kernel_reward.sandbox.policy import (
    CLONE_NEWPID,
    MNT_DETACH,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_REC,
    Isolation,
    SandboxPolicy,
    check_call,
    enforce_required,
    load_libc,
)

# Termination requests the reaper passes on to the namespace's pid 1.
_FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def enter_pid_namespace(policy: SandboxPolicy, isolation: Isolation) -> None:
    """Make the rest of this child run as pid 1 of a new pid namespace, with a /proc that shows only it.

    unshare(CLONE_NEWPID) only moves the caller's future children, so this forks: the function returns in the
    child (pid 1 in the namespace; killing it kills everything the candidate starts there), while the calling
    process stays behind as a reaper that never returns: it forwards SIGTERM / SIGINT to the child, waits for it
    and exits as it did (same exit code, or the same signal). Seen from outside, the process the caller's parent
    forked still ends as the candidate ended; it holds the same file descriptors and process group.

    Call it single-threaded (it forks), as root, after ``enter_namespaces`` (the new /proc is mounted in that
    private mount namespace; without one the pid namespace is entered but /proc is left alone) and before
    ``drop_privileges``. In the child, ``os.getpid()`` is 1: never send that pid to the parent.
    """
    if not policy.isolate_pids:
        return
    try:
        check_call(load_libc().unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
    except OSError as exc:
        isolation.missing.append(f"pid_namespace: {exc}")
        enforce_required(policy, isolation)
        return
    # The reaper reads the child's signal handlers through this procfs: once the child mounts its own over /proc
    # (in the mount namespace both share), /proc no longer shows the child under its outside pid.
    host_proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    alive_r, alive_w = (
        os.pipe()
    )  # the reaper holds the write end until it exits: EOF tells the child it is gone
    # Termination requests wait until the reaper can forward them; a reaper must see SIGCHLD's default to wait.
    saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED_SIGNALS)
    ignores_children = signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN
    if ignores_children:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        child = os.fork()
    except OSError:
        for fd in (host_proc, alive_r, alive_w):
            os.close(fd)
        signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)
        if ignores_children:
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        raise
    if child:
        os.close(alive_r)
        _reap_and_exit(child, host_proc, saved_mask)
    os.close(host_proc)
    os.close(alive_w)
    set_parent_death_signal()
    reaper_gone = select.select([alive_r], [], [], 0)[0]  # the reaper died before the line above took effect
    os.close(alive_r)
    if reaper_gone:
        os._exit(128 + signal.SIGKILL)
    if ignores_children:
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)
    isolation.pid_namespace = os.getpid() == 1
    if not isolation.pid_namespace:
        isolation.missing.append(f"pid_namespace: the child is pid {os.getpid()}, not 1")
    elif not isolation.mount_namespace:
        isolation.missing.append("proc_private: no private mount namespace to mount a procfs in")
    else:
        try:
            _mount_fresh_proc()
            isolation.proc_private = True
        except OSError as exc:
            isolation.missing.append(f"proc_private: {exc}")
    enforce_required(policy, isolation)


def _reap_and_exit(child: int, host_proc: int, saved_mask: set[signal.Signals]) -> NoReturn:
    """The reaper's whole life: forward termination requests to ``child`` (pid 1 of the new namespace), wait for
    it, exit as it did. Never returns into the caller's code; on any error it exits with 70 (EX_SOFTWARE)."""
    code = 70
    try:
        # pid 1 of a namespace drops every signal it has no handler for, SIGKILL excepted: a request the child
        # would not catch becomes a SIGKILL, and the reaper then reports the signal that was asked for.
        killed_for: list[int] = []

        def forward(signum: int, _frame: object) -> None:
            if _catches(host_proc, child, signum):
                sig = signum
            else:
                sig = signal.SIGKILL
                killed_for.append(signum)
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, sig)

        for signum in _FORWARDED_SIGNALS:
            signal.signal(signum, forward)
        signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask - set(_FORWARDED_SIGNALS))
        # Wait without reaping, then stop forwarding, then reap: a forward can never hit a reused pid.
        os.waitid(os.P_PID, child, os.WEXITED | os.WNOWAIT)
        signal.pthread_sigmask(signal.SIG_BLOCK, _FORWARDED_SIGNALS)
        _, status = os.waitpid(child, 0)
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
        else:
            sig = os.WTERMSIG(status)
            if sig == signal.SIGKILL and killed_for:
                sig = killed_for[0]
            code = 128 + sig
            _raise_on_self(sig)
    finally:
        os._exit(code)


def _catches(proc_fd: int, pid: int, signum: int) -> bool:
    """Whether ``pid`` has a handler for ``signum`` (its SigCgt mask, read through the procfs ``proc_fd``)."""
    try:
        fd = os.open(f"{pid}/status", os.O_RDONLY | os.O_CLOEXEC, dir_fd=proc_fd)
        with open(fd, "rb") as f:
            for line in f:
                if line.startswith(b"SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except OSError:
        pass
    return True  # unknown (or already gone): sending the signal itself is harmless


def _raise_on_self(sig: int) -> None:
    """Die by ``sig`` (no core dump); returns only if its default action does not terminate."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if sig not in (signal.SIGKILL, signal.SIGSTOP):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})
    os.kill(os.getpid(), sig)


def _mount_fresh_proc() -> None:
    """Mount a procfs of the current pid namespace over /proc.

    Whatever was mounted inside the old /proc (a container runtime's masks: /dev/null over /proc/kcore, a
    read-only /proc/sys) is bound back at the same place, read-only where it was: a fresh procfs must not show
    more than the old one did. If that fails, the fresh procfs is taken away again and the error raised.
    """
    libc = load_libc()
    held = []
    try:
        for mount_id, point in outermost(
            m for m in mountinfo() if is_under(m[1], ["/proc"]) and m[1] != "/proc"
        ):
            fd = open_mount_root(mount_id, point)
            if fd is not None:
                held.append((point, fd))
        check_call(
            libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount(proc)"
        )
        try:
            for point, fd in held:
                check_call(
                    libc.mount(
                        f"/proc/self/fd/{fd}".encode(), os.fsencode(point), None, MS_BIND | MS_REC, None
                    ),
                    f"carry {point} over to the new /proc",
                )
                flags = os.fstatvfs(fd).f_flag
                if flags & os.ST_RDONLY:
                    remount_read_only(os.fsencode(point), flags)
        except OSError:
            libc.umount2(b"/proc", MNT_DETACH)
            raise
    finally:
        for _, fd in held:
            os.close(fd)
