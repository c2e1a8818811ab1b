"""OS-level isolation of one untrusted child process: namespaces, private directories, privilege drop, limits.

This package knows nothing about kernels, torch or Triton. Child side (inside a freshly forked process, before any
untrusted code, in this order): ``enter_namespaces`` (network, IPC, UTS and mount, private tmpfs over /tmp,
/var/tmp and /dev/shm), ``enter_pid_namespace``, ``make_private_dir``, ``make_filesystem_read_only``,
``clean_environment`` (only ``ENV_ALLOW_LIST`` survives), ``drop_privileges``, ``restrict_syscalls``
(no_new_privs and a seccomp filter), ``apply_rlimits``; each layer degrades gracefully where the host forbids it
and says what it achieved in an ``Isolation`` record. Parent side: ``kill_process_group`` and
``kill_uid_processes`` (a kill of the whole group and of whatever escaped it under the child's uid), ``rss_bytes``
and ``group_memory`` for the memory watchdog, and ``OutputTail`` (the head and tail of a child's output).

One module per layer: ``policy`` (what is asked and achieved, the shared Linux constants), ``namespaces``,
``pid_namespace``, ``filesystem``, ``process`` (environment, privileges, limits), ``syscall_filter``,
``parent``. The structure and each layer: docs/service.md#the-sandbox.
"""

from kernel_reward.sandbox.filesystem import make_filesystem_read_only, make_private_dir
from kernel_reward.sandbox.namespaces import (
    close_fds_except,
    cover_with_tmpfs,
    enter_namespaces,
    expose_paths,
    paths_inside,
    set_parent_death_signal,
)
from kernel_reward.sandbox.parent import (
    GroupMemory,
    OutputTail,
    group_memory,
    kill_process_group,
    kill_uid_processes,
    processes_of_uid,
    read_nonblocking,
    rss_bytes,
)
from kernel_reward.sandbox.pid_namespace import enter_pid_namespace
from kernel_reward.sandbox.policy import (
    ENV_ALLOW_LIST,
    KERNEL_TREES,
    PRIVATE_TMPFS_MOUNTS,
    GiB,
    Isolation,
    MiB,
    SandboxError,
    SandboxLimits,
    SandboxPolicy,
)
from kernel_reward.sandbox.process import apply_rlimits, clean_environment, drop_privileges
from kernel_reward.sandbox.syscall_filter import restrict_syscalls

__all__ = [
    "ENV_ALLOW_LIST",
    "KERNEL_TREES",
    "PRIVATE_TMPFS_MOUNTS",
    "GiB",
    "GroupMemory",
    "Isolation",
    "MiB",
    "OutputTail",
    "SandboxError",
    "SandboxLimits",
    "SandboxPolicy",
    "apply_rlimits",
    "clean_environment",
    "close_fds_except",
    "cover_with_tmpfs",
    "drop_privileges",
    "enter_namespaces",
    "enter_pid_namespace",
    "expose_paths",
    "group_memory",
    "kill_process_group",
    "kill_uid_processes",
    "make_filesystem_read_only",
    "make_private_dir",
    "paths_inside",
    "processes_of_uid",
    "read_nonblocking",
    "restrict_syscalls",
    "rss_bytes",
    "set_parent_death_signal",
]
