"""Child side, first layers: close inherited descriptors, die with the parent, new network, IPC, UTS and mount
namespaces with private tmpfs mounts (``enter_namespaces``), and the paths a child may still see
(``expose_paths``)."""

from __future__ import annotations

import os
import signal
import stat
from pathlib import Path

from kernel_reward.sandbox.policy import (
    CLONE_NEWIPC,
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWUTS,
    MS_BIND,
    MS_NODEV,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    PR_SET_PDEATHSIG,
    PRIVATE_TMPFS_MOUNTS,
    SANDBOX_HOSTNAME,
    Isolation,
    MiB,
    SandboxPolicy,
    check_call,
    enforce_required,
    load_libc,
)


def close_fds_except(keep: list[int]) -> None:
    """Close every descriptor of this process but ``keep`` (sorted): a sandboxed child inherits nothing by
    accident (a lock, another child's channel, the service's sockets)."""
    previous = -1
    for fd in sorted(keep):
        if fd > previous + 1:
            os.closerange(previous + 1, fd)
        previous = fd
    os.closerange(previous + 1, 65536)


def set_parent_death_signal(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to kill this process when its parent dies (cleared by setuid, so call again after)."""
    check_call(load_libc().prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def enter_namespaces(policy: SandboxPolicy, isolation: Isolation, expose: list[str] | None = None) -> None:
    """Move the calling (single-threaded, root) process into new network, IPC, UTS and mount namespaces.

    Must run before any thread is started (unshare(CLONE_NEWNS) fails in a multi-threaded process). The new
    network namespace has only a downed loopback device: no socket can reach anything. The IPC namespace starts
    empty and dies with its last process, taking every SysV object and POSIX message queue made in it along. The
    UTS namespace carries the host name ``SANDBOX_HOSTNAME``. The mount namespace gets private tmpfs mounts over
    the world-writable directories.
    """
    libc = load_libc()
    for wanted, flag, layer in (
        (policy.isolate_network, CLONE_NEWNET, "network_namespace"),
        (policy.isolate_ipc, CLONE_NEWIPC, "ipc_namespace"),
        (policy.isolate_hostname, CLONE_NEWUTS, "uts_namespace"),
    ):
        if not wanted:
            continue
        try:
            check_call(libc.unshare(flag), f"unshare({layer})")
            if flag == CLONE_NEWUTS:
                name = SANDBOX_HOSTNAME.encode()
                check_call(libc.sethostname(name, len(name)), "sethostname")
            setattr(isolation, layer, True)
        except OSError as exc:
            isolation.missing.append(f"{layer}: {exc}")
    if policy.private_mounts:
        try:
            check_call(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
            # Make every mount private so nothing we mount propagates back to the host.
            check_call(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount(/, MS_PRIVATE)")
            isolation.mount_namespace = True
        except OSError as exc:
            isolation.missing.append(f"mount_namespace: {exc}")
    if isolation.mount_namespace:
        options = f"size={policy.limits.tmpfs_bytes},mode=1777".encode()
        mounted = []
        for target in PRIVATE_TMPFS_MOUNTS:
            if not os.path.isdir(target):
                continue
            # The interpreter or our own code may live inside a directory we are about to cover (a checkout or a
            # virtualenv under /tmp): those paths are bound back, read-only.
            keep = paths_inside(target, expose or [])
            try:
                cover_with_tmpfs(target, options, keep, read_only=True)
                mounted.append(target)
                isolation.kept_paths.extend(keep)
            except OSError as exc:
                isolation.missing.append(f"private_tmp {target}: {exc}")
        isolation.private_tmp = "/tmp" in mounted
        if expose and isolation.private_tmp:
            try:
                isolation.hidden_dirs = expose_paths(expose)
            except OSError as exc:
                isolation.missing.append(f"expose_paths: {exc}")
    enforce_required(policy, isolation)


def paths_inside(directory: str, paths: list[str]) -> list[str]:
    """The existing ``paths`` strictly inside ``directory`` (resolved), outermost only: a path inside another
    kept path is already covered by it. ``directory`` itself is never kept (that would undo its privacy)."""
    root = Path(os.path.realpath(directory))
    inside = sorted(
        {
            resolved
            for raw in paths
            if (resolved := Path(os.path.realpath(raw))) != root
            and resolved.is_relative_to(root)
            and resolved.exists()
        }
    )
    outermost: list[Path] = []
    for path in inside:  # sorted: a parent comes before everything inside it
        if not any(path.is_relative_to(kept) for kept in outermost):
            outermost.append(path)
    return [str(path) for path in outermost]


def cover_with_tmpfs(directory: str, options: bytes, keep: list[str], *, read_only: bool) -> None:
    """Mount a fresh tmpfs over ``directory`` (in this mount namespace) and bind each path of ``keep`` (inside
    ``directory``) back at its old place, read-only if asked. The kept paths are held open through the mount, so
    no staging area is needed."""
    libc = load_libc()
    held = [(path, os.open(path, os.O_PATH)) for path in keep]
    try:
        check_call(
            libc.mount(b"tmpfs", directory.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options),
            f"tmpfs over {directory}",
        )
        for path, fd in held:
            source = f"/proc/self/fd/{fd}"
            if os.path.isdir(source):
                os.makedirs(path, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                Path(path).touch()
            check_call(
                libc.mount(source.encode(), path.encode(), None, MS_BIND | MS_REC, None), f"bind {path}"
            )
            if read_only:
                check_call(
                    libc.mount(b"none", path.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY, None),
                    f"read-only {path}",
                )
    finally:
        for _, fd in held:
            os.close(fd)


def _untraversable_ancestor(path: Path) -> Path | None:
    """The outermost directory above ``path`` that other users cannot enter (e.g. /root, mode 0700)."""
    for ancestor in [*reversed(path.parents)][1:]:
        if not os.stat(ancestor).st_mode & stat.S_IXOTH:
            return ancestor
    return None


def expose_paths(paths: list[str]) -> list[str]:
    """Keep ``paths`` (the interpreter, its libraries) reachable for an unprivileged uid.

    When a needed path lies under a directory other users cannot enter (a Python installed under /root), that
    directory is replaced, in this mount namespace only, by a tmpfs that holds binds of just the needed entries:
    the interpreter stays importable and everything else there becomes invisible. Needs root and a private mount
    namespace. Returns the directories replaced.
    """
    groups: dict[Path, set[Path]] = {}
    for raw in paths:
        path = Path(raw).resolve()
        if not path.exists():
            continue
        ancestor = _untraversable_ancestor(path)
        if ancestor is not None:
            groups.setdefault(ancestor, set()).add(ancestor / path.relative_to(ancestor).parts[0])
    for ancestor, entries in groups.items():
        keep = [str(entry) for entry in sorted(entries)]
        cover_with_tmpfs(str(ancestor), f"mode=0755,size={16 * MiB}".encode(), keep, read_only=False)
    return [str(a) for a in groups]
