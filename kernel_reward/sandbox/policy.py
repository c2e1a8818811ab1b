"""What a sandbox is asked for (``SandboxPolicy``, ``SandboxLimits``) and what it achieved (``Isolation``),
plus the Linux constants and the libc access every layer shares."""

from __future__ import annotations

import ctypes
import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

GiB = 1024**3
MiB = 1024**2

# From <sched.h> / <sys/mount.h> / <sys/prctl.h>; stable Linux ABI values.
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
MNT_DETACH = 2

# statvfs flags -> the mount flags that keep them across a remount (a remount sets exactly the flags it is given).
KEPT_MOUNT_FLAGS = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC))

# Directories every unprivileged process can write to: each gets a fresh private tmpfs in the child's own mount
# namespace, so a candidate cannot leave files for (or read files of) another candidate or the host.
PRIVATE_TMPFS_MOUNTS = ("/tmp", "/var/tmp", "/dev/shm")

SANDBOX_HOSTNAME = "sandbox"  # the host name inside a child's own UTS namespace

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
    address_space_bytes: int | None = (
        16 * GiB
    )  # RLIMIT_AS on top of what the warm process already maps; CPU only
    memory_bytes: int | None = 16 * GiB  # resident-set watchdog enforced by the parent (works with CUDA too)
    open_files: int | None = 512
    processes: int | None = 256  # RLIMIT_NPROC of the child's private uid: threads count too (torch, ptxas)
    file_size_bytes: int | None = 256 * MiB
    output_bytes: int = 64 * 1024  # stdout+stderr bytes kept (head + tail); the rest is drained and dropped
    tmpfs_bytes: int = 1 * GiB  # size of each private tmpfs

    def __post_init__(self) -> None:
        for name in (
            "cpu_seconds",
            "address_space_bytes",
            "memory_bytes",
            "open_files",
            "processes",
            "file_size_bytes",
        ):
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
    # SysV / POSIX IPC objects and the host name of the child's own: a message queue or shared segment left by
    # one candidate is gone with its namespace, and the host's name stays unknown
    isolate_ipc: bool = True
    isolate_hostname: bool = True
    filter_syscalls: bool = True  # PR_SET_NO_NEW_PRIVS and the seccomp filter (``restrict_syscalls``)
    drop_privileges: bool = True  # only possible (and only needed) when the parent runs as root
    # The three layers below (and ``filter_syscalls``) are applied by the caller when set: ``enter_pid_namespace``, ``clean_environment``,
    # ``make_filesystem_read_only``. ``Isolation.for_policy`` records which were asked for, so "full" needs them.
    isolate_pids: bool = (
        True  # new pid namespace with its own /proc: the candidate sees and signals only itself
    )
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
    ipc_namespace: bool = False
    uts_namespace: bool = False  # its host name is SANDBOX_HOSTNAME
    no_new_privs: bool = False
    syscall_filter: int | None = None  # how many system calls the seccomp filter denies; None: no filter
    private_tmp: bool = False
    uid: int | None = None  # the uid the candidate ran as (None: the parent's own)
    rlimits: dict[str, int | None] = field(default_factory=dict)
    gpu_memory_fraction: float | None = None
    memory_watchdog_bytes: int | None = None
    wall_clock_s: float | None = None
    hidden_dirs: list[str] = field(default_factory=list)  # replaced by a tmpfs exposing only the interpreter
    kept_paths: list[str] = field(
        default_factory=list
    )  # interpreter / code paths bound back read-only under a tmpfs
    pid_namespace: bool = False  # pid 1 of a pid namespace of its own
    proc_private: bool = False  # /proc is that namespace's procfs: it lists only the candidate's processes
    env_kept: list[str] | None = (
        None  # inherited variables left by clean_environment (names); None: not cleaned
    )
    read_only_root: bool = False  # / is mounted read-only
    read_only_mounts: int = 0  # mounts that are read-only after make_filesystem_read_only, / included
    requested: list[str] = field(
        default_factory=list
    )  # optional layers the policy asked for (see for_policy)
    missing: list[str] = field(default_factory=list)  # layers that could not be applied, with the reason

    @classmethod
    def for_policy(cls, policy: SandboxPolicy) -> Isolation:
        """An empty record that knows which optional layers ``policy`` asks for: ``level`` is "full" only when
        each of them was achieved (a caller that forgets one gets "partial", not a silent "full")."""
        wanted = {
            "pid_namespace": policy.isolate_pids,
            "clean_environment": policy.clean_environment,
            "read_only_filesystem": policy.read_only_filesystem,
            "ipc_namespace": policy.isolate_ipc,
            "uts_namespace": policy.isolate_hostname,
            "syscall_filter": policy.filter_syscalls,
        }
        return cls(requested=[name for name, on in wanted.items() if on])

    def optional_layers(self) -> dict[str, bool]:
        """Whether each optional layer (the names ``requested`` uses) was achieved."""
        return {
            "pid_namespace": self.pid_namespace and self.proc_private,
            "clean_environment": self.env_kept is not None,
            "read_only_filesystem": self.read_only_root,
            "ipc_namespace": self.ipc_namespace,
            "uts_namespace": self.uts_namespace,
            "syscall_filter": self.no_new_privs and self.syscall_filter is not None,
        }

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


def load_libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def check_call(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def enforce_required(policy: SandboxPolicy, isolation: Isolation) -> None:
    if policy.require_full and isolation.missing:
        raise SandboxError("required isolation layer missing: " + "; ".join(isolation.missing))
