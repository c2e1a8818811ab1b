"""Child side: ``PR_SET_NO_NEW_PRIVS`` and a seccomp filter over the kernel interfaces a candidate has no use for.

The filter answers ``EPERM`` to keyrings (a key outlives the process), ptrace and cross-process memory access,
bpf, perf events, userfaultfd, SysV and POSIX message queues, io_uring (whose operations seccomp cannot see),
namespace changes (``unshare``, ``setns``, ``clone`` with a ``CLONE_NEW*`` flag), mounts, modules, clocks and
host names. ``clone3`` answers ``ENOSYS`` (its flags sit behind a pointer the filter cannot read): the C library
then falls back to ``clone``, whose flags it can. A system call of another ABI (i386 or x32 on x86_64) kills the
process. The filter covers every thread (``SECCOMP_FILTER_FLAG_TSYNC``) and is inherited by every child; nothing
can remove it. Only x86_64 is supported: elsewhere the layer is recorded as missing.
"""

from __future__ import annotations

import ctypes
import errno
import platform

from kernel_reward.sandbox.policy import Isolation, SandboxPolicy, check_call, enforce_required, load_libc

PR_SET_NO_NEW_PRIVS = 38
PR_GET_NO_NEW_PRIVS = 39
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SYS_SECCOMP_X86_64 = 317

# x86_64 numbers, from <asm/unistd_64.h>.
DENIED_X86_64 = {
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "fanotify_init": 300,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "syslog": 103,
    "acct": 163,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "settimeofday": 164,
    "clock_settime": 227,
    "clock_adjtime": 305,
    "adjtimex": 159,
    "sethostname": 170,
    "setdomainname": 171,
    "lookup_dcookie": 212,
    "quotactl": 179,
    "vhangup": 153,
}
SYS_CLONE_X86_64 = 56
SYS_CLONE3_X86_64 = 435
# CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
CLONE_NAMESPACE_FLAGS = (
    0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
)

# Classic BPF, as seccomp reads it (<linux/filter.h>, <linux/seccomp.h>).
_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JUMP_ANY_BIT = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
# Offsets in struct seccomp_data: the call's number, its ABI, and the low half of args[0] (little-endian).
_NR_OFFSET, _ARCH_OFFSET, _ARG0_OFFSET = 0, 4, 16


def denial_program(denied: dict[str, int] = DENIED_X86_64) -> list[tuple[int, int, int, int]]:
    """The filter as (code, jump-if-true, jump-if-false, k) instructions. Jumps are written against labels and
    resolved here, so the program reads top to bottom."""
    program: list[tuple[int, str | int, str | int, int] | str] = [
        (_LOAD_WORD, 0, 0, _ARCH_OFFSET),
        (_JUMP_EQUAL, 0, "kill", AUDIT_ARCH_X86_64),
        (_LOAD_WORD, 0, 0, _NR_OFFSET),
        (_JUMP_AT_LEAST, "kill", 0, X32_SYSCALL_BIT),
        (_JUMP_EQUAL, "enosys", 0, SYS_CLONE3_X86_64),
        (_JUMP_EQUAL, "clone", 0, SYS_CLONE_X86_64),
        *[(_JUMP_EQUAL, "deny", 0, number) for number in sorted(set(denied.values()))],
        (_RETURN, 0, 0, RET_ALLOW),
        "clone",
        (_LOAD_WORD, 0, 0, _ARG0_OFFSET),
        (_JUMP_ANY_BIT, "deny", 0, CLONE_NAMESPACE_FLAGS),
        (_RETURN, 0, 0, RET_ALLOW),
        "deny",
        (_RETURN, 0, 0, RET_ERRNO | errno.EPERM),
        "enosys",
        (_RETURN, 0, 0, RET_ERRNO | errno.ENOSYS),
        "kill",
        (_RETURN, 0, 0, RET_KILL_PROCESS),
    ]
    labels: dict[str, int] = {}
    instructions = []
    for item in program:
        if isinstance(item, str):
            labels[item] = len(instructions)
        else:
            instructions.append(item)
    resolved = []
    for index, (code, if_true, if_false, k) in enumerate(instructions):

        def offset(target: str | int, index: int = index) -> int:
            if isinstance(target, int):
                return target
            distance = labels[target] - index - 1
            if not 0 <= distance < 256:
                raise ValueError(f"seccomp jump to {target!r} is {distance} instructions away")
            return distance

        resolved.append((code, offset(if_true), offset(if_false), k))
    return resolved


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def restrict_syscalls(policy: SandboxPolicy, isolation: Isolation) -> None:
    """Set ``PR_SET_NO_NEW_PRIVS`` (no set-uid binary or file capability raises privileges again) and install the
    filter on every thread of this process. Call it after ``drop_privileges`` and before any untrusted code; each
    step that fails is recorded in ``isolation.missing``."""
    if not policy.filter_syscalls:
        return
    libc = load_libc()
    try:
        check_call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
        isolation.no_new_privs = True
    except OSError as exc:
        isolation.missing.append(f"no_new_privs: {exc}")
    if platform.machine() != "x86_64":
        isolation.missing.append(f"syscall_filter: no filter for {platform.machine()} (x86_64 only)")
    elif isolation.no_new_privs:
        try:
            _install(denial_program())
            isolation.syscall_filter = len(DENIED_X86_64)
        except OSError as exc:
            isolation.missing.append(f"syscall_filter: {exc}")
    enforce_required(policy, isolation)


def _install(program: list[tuple[int, int, int, int]]) -> None:
    filters = (_SockFilter * len(program))(*[_SockFilter(*instruction) for instruction in program])
    prog = _SockFprog(len(program), filters)
    libc = load_libc()
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(
        ctypes.c_long(SYS_SECCOMP_X86_64),
        ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
        ctypes.c_uint(SECCOMP_FILTER_FLAG_TSYNC),
        ctypes.byref(prog),
    )
    if result != 0:  # with TSYNC, a positive result is the id of a thread that could not be synchronised
        raise OSError(
            ctypes.get_errno() if result < 0 else errno.EBUSY, f"seccomp(SET_MODE_FILTER) returned {result}"
        )
