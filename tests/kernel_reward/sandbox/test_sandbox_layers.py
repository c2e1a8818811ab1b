"""Real-fork tests of the sandbox's pid namespace, read-only file system and clean environment layers.

Each test forks a child that applies the layers in the order the zygote will (mount namespace, pid namespace,
read-only mounts, clean environment), checks from inside what a candidate could see and do, and reports JSON
lines through a pipe. The forked process becomes the reaper; the pipe reaches EOF only when every process that
holds its write end (the reaper, the namespace's pid 1 and anything it forked) is gone. No mocks, no torch.
Skipped when not root or when the host forbids the namespaces.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import select
import signal
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_reward.sandbox import (
    ENV_ALLOW_LIST,
    PRIVATE_TMPFS_MOUNTS,
    Isolation,
    SandboxPolicy,
    clean_environment,
    enter_namespaces,
    enter_pid_namespace,
    make_filesystem_read_only,
    restrict_syscalls,
)
from kernel_reward.sandbox.policy import SANDBOX_HOSTNAME

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: namespaces and mounts")

REPO_ROOT = Path(__file__).resolve().parents[3]
SECRET = "KERNEL_REWARD_TEST_SECRET"
SET_VARS = {"HOME": "/tmp/home", "TMPDIR": "/tmp", "TRITON_CACHE_DIR": "/tmp/triton-cache"}
# Layers without which these tests have nothing to check: their absence skips, it does not fail.
NEEDED = ("mount_namespace", "private_tmp", "pid_namespace", "proc_private")

Report = Callable[[dict], None]


class SandboxedChild:
    """A forked process that entered the layers and runs ``body(isolation, report)`` as pid 1 of its namespace;
    ``pid`` is the reaper's (the process the test forked). The body's return value is the exit code."""

    def __init__(
        self,
        body: Callable[[Isolation, Report], int],
        *,
        writable: tuple[str, ...] = PRIVATE_TMPFS_MOUNTS,
        before_pid: Callable[[], None] | None = None,
    ) -> None:
        self.buffer = b""
        self.status: int | None = None
        read_end, write_end = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # never returns into pytest
            code = 70
            try:
                os.close(read_end)

                def report(data: dict) -> None:
                    os.write(write_end, json.dumps(data).encode() + b"\n")

                policy = SandboxPolicy()
                isolation = Isolation.for_policy(policy)
                enter_namespaces(policy, isolation)
                if before_pid is not None and isolation.mount_namespace:
                    before_pid()
                enter_pid_namespace(policy, isolation)
                make_filesystem_read_only(isolation, list(writable))
                isolation.env_kept = clean_environment(ENV_ALLOW_LIST, SET_VARS)
                report({"isolation": isolation.to_dict()})
                code = body(isolation, report)
            except BaseException:  # noqa: BLE001 - report and exit, whatever happened
                try:
                    os.write(write_end, json.dumps({"error": traceback.format_exc()}).encode() + b"\n")
                except BaseException:  # noqa: BLE001
                    pass
            finally:
                os._exit(code)
        os.close(write_end)
        self.fd = read_end
        first = self.report()
        assert "isolation" in first, first
        self.isolation = first["isolation"]
        missing = [m for m in self.isolation["missing"] if m.startswith(NEEDED)]
        if missing or not all(self.isolation[name] for name in NEEDED):
            self.close()
            pytest.skip(f"the host forbids a needed layer: {missing or self.isolation}")

    def report(self, timeout_s: float = 5.0) -> dict:
        """The next JSON line the child wrote."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self.buffer:
            assert self._read(deadline), f"no report (end of file); so far: {self.buffer!r}"
        line, self.buffer = self.buffer.split(b"\n", 1)
        data = json.loads(line)
        assert "error" not in data, data["error"]
        return data

    def ends(self, timeout_s: float = 2.0) -> bool:
        """Whether the pipe reaches end of file within ``timeout_s``: every process holding it has exited."""
        deadline = time.monotonic() + timeout_s
        try:
            while self._read(deadline):
                pass
        except TimeoutError:
            return False
        return True

    def wait(self, timeout_s: float = 5.0) -> int:
        """The reaper's wait status."""
        deadline = time.monotonic() + timeout_s
        while self.status is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = status
            elif time.monotonic() > deadline:
                raise TimeoutError(f"reaper {self.pid} still running after {timeout_s} s")
            else:
                time.sleep(0.01)
        return self.status

    def close(self) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)  # the namespace's pid 1 follows (parent-death signal)
            self.wait()
        os.close(self.fd)

    def _read(self, deadline: float) -> bool:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([self.fd], [], [], remaining)[0]:
            raise TimeoutError("the child neither wrote nor closed the pipe in time")
        data = os.read(self.fd, 65536)
        self.buffer += data
        return bool(data)


@pytest.fixture
def sandboxed():
    children: list[SandboxedChild] = []

    def start(body: Callable[[Isolation, Report], int], **kwargs) -> SandboxedChild:
        children.append(child := SandboxedChild(body, **kwargs))
        return child

    yield start
    for child in children:
        child.close()


def _write_errno(directory: str) -> str:
    """ "ok" when a new file can be created in ``directory``, else the errno name (the file is removed again)."""
    path = os.path.join(directory, f".sandbox-layers-probe-{os.getpid()}-{time.monotonic_ns()}")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        return errno.errorcode[exc.errno]
    os.close(fd)
    os.unlink(path)
    return "ok"


def _environ_block_names(raw: bytes) -> list[str]:
    return sorted({entry.split(b"=", 1)[0].decode() for entry in raw.split(b"\0") if entry})


def _c_environ_names() -> list[str]:
    environ = ctypes.POINTER(ctypes.c_char_p).in_dll(ctypes.CDLL(None), "environ")
    names, i = [], 0
    while environ and environ[i]:
        names.append(environ[i].split(b"=", 1)[0].decode())
        i += 1
    return sorted(names)


def _c_getenv(name: str) -> str | None:
    getenv = ctypes.CDLL(None).getenv
    getenv.restype = ctypes.c_char_p
    value = getenv(name.encode())
    return None if value is None else value.decode()


def test_child_is_pid_1_sees_only_itself_writes_only_tmp_and_keeps_only_allowed_variables(
    sandboxed, monkeypatch
):
    monkeypatch.setenv(SECRET, "hunter2")

    def body(isolation: Isolation, report: Report) -> int:
        with open("/proc/self/environ", "rb") as f:
            exec_block = f.read()
        report(
            {
                "pid": os.getpid(),
                "proc_pids": sorted(name for name in os.listdir("/proc") if name.isdigit()),
                "tasks": os.listdir("/proc/1/task"),
                "writes": {d: _write_errno(d) for d in ("/", "/usr", str(REPO_ROOT), "/tmp", "/dev/shm")},
                "environ": sorted(os.environ),
                "c_environ": _c_environ_names(),
                "exec_block": _environ_block_names(exec_block),
                "secret_in_exec_block": b"hunter2" in exec_block,
                "getenv_secret": _c_getenv(SECRET),
            }
        )
        return 7

    child = sandboxed(body)
    seen = child.report()
    assert child.ends(), "pid 1 is still running after it returned"
    assert os.WIFEXITED(child.wait()) and os.WEXITSTATUS(child.status) == 7, child.status

    iso = child.isolation
    assert iso["missing"] == [], iso["missing"]
    assert (
        iso["pid_namespace"]
        and iso["proc_private"]
        and iso["read_only_root"]
        and iso["read_only_mounts"] >= 1
    )
    assert set(iso["requested"]) == {
        "pid_namespace",
        "clean_environment",
        "read_only_filesystem",
        "ipc_namespace",
        "uts_namespace",
        "syscall_filter",
    }
    assert iso["ipc_namespace"] and iso["uts_namespace"]
    # no private uid and no syscall filter in this test: drop_privileges and restrict_syscalls were not applied
    assert iso["level"] == "partial", iso
    assert seen["pid"] == 1
    assert seen["proc_pids"] == ["1"] and seen["tasks"] == ["1"]
    assert seen["writes"]["/tmp"] == "ok" and seen["writes"]["/dev/shm"] == "ok"
    for directory in ("/", "/usr"):
        assert seen["writes"][directory] in ("EROFS", "EACCES"), seen["writes"]
    # A checkout under /tmp (a CI clone) is not even there: the child's /tmp is a fresh private tmpfs.
    checkout_hidden = str(REPO_ROOT).startswith(("/tmp/", "/var/tmp/", "/dev/shm/"))
    assert seen["writes"][str(REPO_ROOT)] in (("ENOENT",) if checkout_hidden else ("EROFS", "EACCES")), seen[
        "writes"
    ]
    allowed = set(ENV_ALLOW_LIST) | set(SET_VARS)
    assert set(seen["environ"]) <= allowed and set(SET_VARS) <= set(seen["environ"]), seen["environ"]
    assert seen["c_environ"] == seen["environ"]
    assert SECRET not in seen["environ"] and seen["getenv_secret"] is None
    assert set(iso["env_kept"]) == set(seen["environ"]) - set(SET_VARS)
    # What the process was exec'd with (pytest's own start-up environment) is scrubbed down to the kept names.
    assert set(seen["exec_block"]) <= set(iso["env_kept"]), seen["exec_block"]
    assert not seen["secret_in_exec_block"]


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
IPC_CREAT, IPC_RMID = 0o1000, 0
KEY_SPEC_USER_KEYRING = -4
CLONE_NEWUSER = 0x10000000


def _errno_of(result: int) -> str:
    return "ok" if result >= 0 else errno.errorcode[ctypes.get_errno()]


def _in_a_child(probe: Callable[[], int]) -> int:
    """Run ``probe`` in a forked child (for calls that change their caller) and return its exit code."""
    pid = os.fork()
    if pid == 0:
        os._exit(probe())
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_ipc_and_uts_namespaces_and_the_syscall_filter(sandboxed):
    """A SysV segment of the host is invisible and one made inside dies with the namespace; the host name is the
    sandbox's; keyrings, message queues, ptrace, namespace changes and clone3 are refused, while fork, threads
    and subprocesses (the compiler Triton runs) keep working."""
    host_key = 0x5EC0_0001 + os.getpid() % 1000
    child_key = host_key + 1
    host_segment = LIBC.shmget(host_key, 4096, IPC_CREAT | 0o600)
    assert host_segment >= 0, os.strerror(ctypes.get_errno())
    try:

        def body(isolation: Isolation, report: Report) -> int:
            import subprocess
            import threading

            seen = {
                "host_segment": _errno_of(LIBC.shmget(host_key, 0, 0)),
                "own_segment": _errno_of(LIBC.shmget(child_key, 4096, IPC_CREAT | 0o600)),
                "hostname": os.uname().nodename,
            }
            restrict_syscalls(SandboxPolicy(), isolation)
            thread = threading.Thread(
                target=lambda: seen.update(
                    thread_add_key=_errno_of(
                        LIBC.syscall(248, b"user", b"probe", b"x", 1, KEY_SPEC_USER_KEYRING)
                    )
                )
            )
            thread.start()
            thread.join()
            seen.update(
                no_new_privs=LIBC.prctl(39, 0, 0, 0, 0),
                add_key=_errno_of(LIBC.syscall(248, b"user", b"probe", b"x", 1, KEY_SPEC_USER_KEYRING)),
                keyctl=_errno_of(LIBC.syscall(250, 0, KEY_SPEC_USER_KEYRING, 0, 0, 0)),
                msgget=_errno_of(LIBC.msgget(child_key, IPC_CREAT | 0o600)),
                mq_open=_errno_of(LIBC.syscall(240, b"probe", 0o100 | 2, 0o600, None)),
                bpf=_errno_of(LIBC.syscall(321, 0, None, 0)),
                perf_event_open=_errno_of(LIBC.syscall(298, None, 0, -1, -1, 0)),
                userfaultfd=_errno_of(LIBC.syscall(323, 0)),
                io_uring_setup=_errno_of(LIBC.syscall(425, 1, None)),
                unshare=_errno_of(LIBC.unshare(CLONE_NEWUSER)),
                clone3=_errno_of(LIBC.syscall(435, None, 0)),
                ptrace_traceme=_in_a_child(lambda: 0 if LIBC.syscall(101, 0, 0, 0, 0) == 0 else 1),
                fork=_in_a_child(lambda: 5),
                subprocess=subprocess.run(["/bin/sh", "-c", "exit 3"]).returncode,
                filter=isolation.syscall_filter,
            )
            report(seen)
            return 0

        child = sandboxed(body)
        seen = child.report()
        assert child.ends() and os.WIFEXITED(child.wait()), child.status
    finally:
        LIBC.shmctl(host_segment, IPC_RMID, None)
    assert seen["host_segment"] == "ENOENT" and seen["own_segment"] == "ok", seen
    assert LIBC.shmget(child_key, 0, 0) < 0  # the child's segment went with its namespace
    assert seen["hostname"] == SANDBOX_HOSTNAME != os.uname().nodename
    assert seen["no_new_privs"] == 1 and seen["filter"] and seen["filter"] > 40
    for call in ("add_key", "thread_add_key", "keyctl", "msgget", "mq_open", "bpf", "perf_event_open"):
        assert seen[call] == "EPERM", (call, seen)
    for call in ("userfaultfd", "io_uring_setup", "unshare"):
        assert seen[call] == "EPERM", (call, seen)
    assert seen["clone3"] == "ENOSYS"
    assert seen["ptrace_traceme"] == 1
    assert seen["fork"] == 5 and seen["subprocess"] == 3


def _sleep_with_a_grandchild(report: Report) -> int:
    """Report ready, with a grandchild in the namespace that holds the pipe too, then sleep until killed."""
    if os.fork() == 0:
        time.sleep(30)
        os._exit(0)
    report({"ready": os.getpid()})
    time.sleep(30)
    return 0


def test_sigkill_of_the_reaper_ends_the_whole_namespace(sandboxed):
    child = sandboxed(lambda isolation, report: _sleep_with_a_grandchild(report))
    assert child.report() == {"ready": 1}
    os.kill(child.pid, signal.SIGKILL)
    status = child.wait()
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status
    assert child.ends(), "a process of the pid namespace outlived its reaper"


@pytest.mark.parametrize("catches", [False, True], ids=["default-action", "handler"])
def test_sigterm_to_the_reaper_reaches_pid_1(sandboxed, catches):
    def body(isolation: Isolation, report: Report) -> int:
        if catches:
            signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(3))
        else:
            signal.signal(
                signal.SIGTERM, signal.SIG_DFL
            )  # pid 1 would drop it: the reaper turns it into SIGKILL
        return _sleep_with_a_grandchild(report)

    child = sandboxed(body)
    child.report()
    os.kill(child.pid, signal.SIGTERM)
    status = child.wait()
    if catches:
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3, status
    else:
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, status
    assert child.ends()


# A file Docker masks with /dev/null that this kernel has (kernels differ in which of them they provide).
MASKED = next(
    (p for p in ("/proc/kcore", "/proc/keys", "/proc/timer_list") if os.path.exists(p)), "/proc/cpuinfo"
)


def _mask_proc_like_a_container() -> None:
    """What Docker does to /proc: /dev/null over /proc/kcore and the like, /proc/sys read-only (here: in the
    test's private mount namespace only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    ms_rdonly, ms_remount, ms_bind = 1, 32, 4096
    for source, target, flags in (
        (b"/dev/null", MASKED.encode(), ms_bind),
        (b"/proc/sys", b"/proc/sys", ms_bind),
        (b"none", b"/proc/sys", ms_remount | ms_bind | ms_rdonly),
    ):
        assert libc.mount(source, target, None, flags, None) == 0, os.strerror(ctypes.get_errno())


def test_fresh_proc_keeps_the_masks_of_the_old_one(sandboxed):
    def body(isolation: Isolation, report: Report) -> int:
        try:
            open("/proc/sys/kernel/hostname", "w").close()  # opened only: nothing is written even if it opens
            hostname = "ok"
        except OSError as exc:
            hostname = errno.errorcode[exc.errno]
        report(
            {
                "masked_is_null": os.stat(MASKED).st_rdev == os.stat("/dev/null").st_rdev,
                "sys_read_only": bool(os.statvfs("/proc/sys").f_flag & os.ST_RDONLY),
                "hostname": hostname,
                "proc_pids": sorted(name for name in os.listdir("/proc") if name.isdigit()),
            }
        )
        return 0

    seen = sandboxed(body, before_pid=_mask_proc_like_a_container).report()
    assert seen == {"masked_is_null": True, "sys_read_only": True, "hostname": "EROFS", "proc_pids": ["1"]}


def _mounts_with_odd_names() -> None:
    """Inside the private /tmp: a tmpfs whose path has a space (\\040 in mountinfo), one hidden under a later
    mount, and a plain directory that is to stay writable."""
    libc = ctypes.CDLL(None, use_errno=True)
    for path in ("/tmp/with space", "/tmp/cover/hidden", "/tmp/keep me"):
        os.makedirs(path)
    for target in (b"/tmp/with space", b"/tmp/cover/hidden", b"/tmp/cover"):
        assert libc.mount(b"tmpfs", target, b"tmpfs", 0, b"size=1m") == 0, os.strerror(ctypes.get_errno())


def test_read_only_remount_decodes_escapes_skips_hidden_mounts_and_keeps_writable_dirs(sandboxed):
    def body(isolation: Isolation, report: Report) -> int:
        report(
            {
                "writes": {
                    d: _write_errno(d)
                    for d in ("/tmp", "/tmp/with space", "/tmp/cover", "/tmp/keep me", "/var/tmp")
                }
            }
        )
        return 0

    child = sandboxed(
        body, writable=("/tmp/keep me", "/var/tmp", "/dev/shm"), before_pid=_mounts_with_odd_names
    )
    seen = child.report()
    assert child.isolation["missing"] == [], child.isolation["missing"]
    assert seen["writes"] == {
        "/tmp": "EROFS",
        "/tmp/with space": "EROFS",
        "/tmp/cover": "EROFS",
        "/tmp/keep me": "ok",
        "/var/tmp": "ok",
    }


def test_layers_refuse_without_a_private_mount_namespace():
    """In this (host) mount namespace: nothing is remounted, the refusal is recorded."""
    isolation = Isolation()
    make_filesystem_read_only(isolation, ["/tmp"])
    assert isolation.read_only_mounts == 0 and not isolation.read_only_root
    assert isolation.missing and isolation.missing[0].startswith(
        "read_only_filesystem: no private mount namespace"
    )
    off = SandboxPolicy(isolate_pids=False)
    enter_pid_namespace(off, isolation)  # disabled: returns here, in this process, without forking
    assert not isolation.pid_namespace and os.getpid() != 1


def test_level_holds_the_policy_to_its_optional_layers():
    base = {"network_namespace": True, "mount_namespace": True, "private_tmp": True, "uid": 123456}
    assert Isolation(**base).level == "full"  # a record that asks for no optional layer
    isolation = Isolation.for_policy(SandboxPolicy())
    for name, value in base.items():
        setattr(isolation, name, value)
    assert isolation.level == "partial"
    isolation.pid_namespace = isolation.proc_private = isolation.read_only_root = True
    assert isolation.level == "partial"  # the environment was not cleaned
    isolation.env_kept = []
    isolation.ipc_namespace = isolation.uts_namespace = True
    assert isolation.level == "partial"  # no syscall filter
    isolation.no_new_privs, isolation.syscall_filter = True, 58
    assert isolation.level == "full" and json.loads(json.dumps(isolation.to_dict()))["level"] == "full"
    off = Isolation.for_policy(
        SandboxPolicy(
            isolate_pids=False,
            clean_environment=False,
            read_only_filesystem=False,
            isolate_ipc=False,
            isolate_hostname=False,
            filter_syscalls=False,
        )
    )
    assert off.requested == []
    assert Isolation(env_kept=["PATH"]).level == "partial"
