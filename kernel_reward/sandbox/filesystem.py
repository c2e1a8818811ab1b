"""Child side: a private directory, and every mount but the writable ones remounted read-only."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from kernel_reward.sandbox.policy import (
    KEPT_MOUNT_FLAGS,
    KERNEL_TREES,
    MS_BIND,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    Isolation,
    check_call,
    load_libc,
)


def make_private_dir(path: Path, uid: int | None) -> Path:
    """Create ``path`` (mode 0700) owned by ``uid`` when given (the caller must still be root then)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if uid is not None:
        os.chown(path, uid, uid)
    os.chmod(path, 0o700)
    return path


def make_filesystem_read_only(isolation: Isolation, writable: list[str]) -> None:
    """Remount every mount of this (private) mount namespace read-only, except ``writable`` and ``KERNEL_TREES``.

    A mount at or under a path of ``writable`` (the private tmpfs mounts) stays as it is; a ``writable`` directory
    that is no mount point of its own is first bound onto itself, so it stays writable while the mount holding it
    becomes read-only. Each remount keeps the mount's nosuid / nodev / noexec flags. Mounts hidden under a later
    mount are skipped (no path reaches them). A remount that fails is recorded in ``isolation.missing``; the
    others go on.

    Call it as root, after ``enter_namespaces`` (refuses, recording why, without a private mount namespace: it
    would change the host's mounts) and ``enter_pid_namespace``, after the child's own directories were created,
    and before ``drop_privileges``.
    """
    if not isolation.mount_namespace:
        isolation.missing.append(
            "read_only_filesystem: no private mount namespace (it would remount the host's)"
        )
        return
    keep = sorted({os.path.realpath(path) for path in writable if os.path.exists(path)})
    try:
        points = {point for _, point in mountinfo()}
        for path in keep:
            if path not in points:
                check_call(
                    load_libc().mount(os.fsencode(path), os.fsencode(path), None, MS_BIND | MS_REC, None),
                    f"bind {path} onto itself",
                )
        mounts = mountinfo()
    except OSError as exc:
        isolation.missing.append(f"read_only_filesystem: {exc}")
        return
    read_only = 0
    for mount_id, point in mounts:
        if is_under(point, [*keep, *KERNEL_TREES]):
            continue
        fd = open_mount_root(mount_id, point)
        if fd is None:
            continue
        try:
            flags = os.fstatvfs(fd).f_flag
            if not flags & os.ST_RDONLY:
                remount_read_only(f"/proc/self/fd/{fd}".encode(), flags)
            read_only += 1
            isolation.read_only_root = isolation.read_only_root or point == "/"
        except OSError as exc:
            isolation.missing.append(f"read_only {point}: {exc}")
        finally:
            os.close(fd)
    isolation.read_only_mounts = read_only


_OCTAL_ESCAPE = re.compile(rb"\\([0-7]{3})")


def mountinfo() -> list[tuple[int, str]]:
    """(mount id, mount point) of each line of /proc/self/mountinfo, in mount order. The kernel writes space, tab,
    newline and backslash in paths as octal escapes (``\\040``); they are decoded here."""
    with open("/proc/self/mountinfo", "rb") as f:
        lines = f.read().splitlines()
    mounts = []
    for line in lines:
        fields = line.split(b" ")
        point = _OCTAL_ESCAPE.sub(lambda m: bytes([int(m.group(1), 8)]), fields[4])
        mounts.append((int(fields[0]), os.fsdecode(point)))
    return mounts


def is_under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies below one of them."""
    return any(Path(path).is_relative_to(root) for root in roots)


def outermost(mounts: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """The mounts whose point lies below no other point of ``mounts`` (a recursive bind carries the rest)."""
    mounts = list(mounts)
    points = {point for _, point in mounts}
    return [(i, p) for i, p in mounts if not any(p != other and is_under(p, [other]) for other in points)]


def open_mount_root(mount_id: int, point: str) -> int | None:
    """An O_PATH descriptor of ``point`` when that path reaches the root of mount ``mount_id``; None when another
    mount covers it (or it is gone). Acting on the descriptor afterwards cannot be redirected by a path change."""
    try:
        fd = os.open(point, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with open(f"/proc/self/fdinfo/{fd}", "rb") as f:
            found = next((int(line.split()[1]) for line in f if line.startswith(b"mnt_id:")), None)
    except OSError:
        found = None
    if found == mount_id:
        return fd
    os.close(fd)
    return None


def remount_read_only(target: bytes, statvfs_flags: int) -> None:
    """Make the mount at ``target`` read-only, keeping its nosuid / nodev / noexec flags (``statvfs_flags``)."""
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY
    for st_flag, ms_flag in KEPT_MOUNT_FLAGS:
        if statvfs_flags & st_flag:
            flags |= ms_flag
    check_call(
        load_libc().mount(b"none", target, None, flags, None), f"read-only remount of {os.fsdecode(target)}"
    )
