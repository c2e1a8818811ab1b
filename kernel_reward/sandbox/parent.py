"""Parent side: kill a child's process group and anything it left under its uid, read its memory use (resident
set and the files in its private tmpfs mounts), keep the head and tail of its output."""

from __future__ import annotations

import errno
import logging
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass

from kernel_reward.sandbox.policy import PRIVATE_TMPFS_MOUNTS

log = logging.getLogger(__name__)


def kill_process_group(pgid: int) -> None:
    """SIGKILL every process of the group (the child leads its own session, so pgid == its pid)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError as exc:  # a group member changed uid: the uid sweep below still gets it
        log.debug("killpg(%d): %s", pgid, exc)


def processes_of_uid(uid: int) -> list[int]:
    """Pids whose real uid is ``uid`` (scan of /proc; processes vanishing mid-scan are skipped)."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if os.stat(entry.path).st_uid == uid:
                pids.append(int(entry.name))
        except FileNotFoundError:
            continue
    return pids


def kill_uid_processes(uid: int, rounds: int = 3) -> int:
    """SIGKILL every process running as ``uid``, repeatedly (a fork bomb keeps forking between scans).

    Only meaningful for the private uids this service hands out: nothing else runs under them. Returns the number
    of kills sent.
    """
    sent = 0
    for _ in range(rounds):
        pids = processes_of_uid(uid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                sent += 1
            except (ProcessLookupError, PermissionError):
                pass
    return sent


def rss_bytes(pid: int) -> int | None:
    """Resident set size of ``pid`` in bytes, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


@dataclass(frozen=True)
class GroupMemory:
    """What a child's process group and its helpers hold: resident sets (None when no process is left) and the
    files in their private tmpfs mounts."""

    resident_bytes: int | None
    tmpfs_bytes: int


def group_memory(pgid: int, uid: int | None = None) -> GroupMemory:
    """The memory of every process in process group ``pgid`` and, given ``uid``, of every process that uid owns:
    memory held by a candidate's forked helpers, and the files they left in their private tmpfs, count against
    its limit too.

    One pass over /proc (a few milliseconds) finds them; callers poll it less often than the main process's
    ``rss_bytes``.
    """
    page = os.sysconf("SC_PAGE_SIZE")
    total, members = 0, []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                data = f.read()
            owner = entry.stat().st_uid if uid is not None else None
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # exited meanwhile, or not ours to read
        fields = data[data.rindex(")") + 2 :].split()  # after "pid (comm) ": state ppid pgrp session ...
        if int(fields[2]) == pgid or (uid is not None and owner == uid):
            total += int(fields[21]) * page  # field 24 of stat: rss in pages
            members.append(int(entry.name))
    return GroupMemory(total if members else None, private_tmpfs_bytes(members))


def private_tmpfs_bytes(pids: Iterable[int]) -> int:
    """Bytes held by files in the private tmpfs mounts (``PRIVATE_TMPFS_MOUNTS``) of the processes ``pids``, each
    mount counted once: tmpfs pages are memory that no resident set shows. Read through ``/proc/<pid>/root``,
    which resolves paths in that process's mount namespace (root, or the same uid, may look); a process that is
    gone or not ours to read is skipped."""
    seen: set[int] = set()
    total = 0
    for pid in pids:
        for mount in PRIVATE_TMPFS_MOUNTS:
            path = f"/proc/{pid}/root{mount}"
            try:
                device = os.stat(path).st_dev
                if device in seen:
                    continue
                usage = os.statvfs(path)
            except OSError:
                continue
            seen.add(device)
            total += (usage.f_blocks - usage.f_bfree) * usage.f_frsize
    return total


class OutputTail:
    """Accumulates a child's output keeping the first ``head`` and the last ``limit - head`` bytes."""

    def __init__(self, limit: int, head_fraction: float = 0.25) -> None:
        self.head_limit = int(limit * head_fraction)
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_limit:
                del self.tail[: len(self.tail) - self.tail_limit]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        middle = f"\n[... {dropped} bytes of output dropped ...]\n" if dropped > 0 else ""
        return bytes(self.head).decode(errors="replace") + middle + bytes(self.tail).decode(errors="replace")


def read_nonblocking(fd: int, sink: OutputTail, max_bytes: int = 1 << 20) -> bool:
    """Drain what is available on ``fd`` into ``sink``; returns False at end of file."""
    read = 0
    while read < max_bytes:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return True
        except OSError as exc:
            if exc.errno in (errno.EAGAIN, errno.EINTR):
                return True
            return False
        if not data:
            return False
        sink.feed(data)
        read += len(data)
    return True
