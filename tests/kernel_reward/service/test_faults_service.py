"""Fault matrix of the execution service: one hostile program per fault kind, each must get the right status and a
clear error, the pool must keep serving, and nothing may leak.

Most programs run through ``service_fake_worker`` (plain Python candidates, no kernels: the sandbox layer knows
nothing of kernels either); the last tests run real Triton candidates through the real worker.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from pathlib import Path

import pytest

from kernel_reward.evaluator import Evaluator
from kernel_reward.result import Status
from kernel_reward.sandbox import SandboxLimits, SandboxPolicy, processes_of_uid
from tests.support import service_programs as programs
from tests.support.service_helpers import pool_ids, wait_no_pool_processes

FAKE = "tests.support.service_fake_worker"
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(
    not ROOT, reason="namespaces and the uid drop need root (they degrade otherwise)"
)

HOSTILE = {
    "syntax_error": ("def main(:\n    pass\n", Status.COMPILE_ERROR, "SyntaxError"),
    "exception": ("def main():\n    raise RuntimeError('kaboom')\n", Status.RUNTIME_ERROR, "kaboom"),
    "import_error": ("import no_such_module_xyz\n", Status.RUNTIME_ERROR, "no_such_module_xyz"),
    "segfault": ("import ctypes\ndef main():\n    ctypes.string_at(0)\n", Status.CRASHED, "SIGSEGV"),
    "abort": ("import os\ndef main():\n    os.abort()\n", Status.CRASHED, "SIGABRT"),
    "os_exit_at_import": ("import os\nos._exit(0)\n", Status.CRASHED, "exited with code 0"),
    "os_exit_in_call": ("import os\ndef main():\n    os._exit(7)\n", Status.CRASHED, "exited with code 7"),
    "sys_exit_in_call": ("import sys\ndef main():\n    sys.exit(0)\n", Status.CRASHED, "SystemExit"),
    "infinite_loop": ("def main():\n    while True:\n        pass\n", Status.TIMEOUT, "wall-clock limit"),
    "sleep_forever": (
        "import time\ndef main():\n    time.sleep(10**6)\n",
        Status.TIMEOUT,
        "process group was killed",
    ),
    "huge_allocation": (
        "def main():\n    return len(bytearray(1 << 37))\n",
        Status.RUNTIME_ERROR,
        "MemoryError",
    ),
    "thread_bomb": (
        "import threading, time\ndef main():\n    threads = []\n    while True:\n"
        "        t = threading.Thread(target=time.sleep, args=(60,), daemon=True)\n        t.start()\n"
        "        threads.append(t)\n",
        Status.RUNTIME_ERROR,
        "thread",
    ),
}


@pytest.fixture(scope="module")
def evaluator():
    policy = SandboxPolicy(limits=SandboxLimits(processes=48))
    with Evaluator(
        device="cpu",
        workers=2,
        timeout=3,
        policy=policy,
        worker_module=FAKE,
        pool_options={"wall_clock_grace_s": 0.5},
    ) as ev:
        yield ev
    ids = pool_ids(ev)
    for pool_id in ids:
        assert wait_no_pool_processes(pool_id) == [], "processes left behind after the Evaluator closed"


def _ok(evaluator: Evaluator) -> None:
    result = evaluator.evaluate("ref", "def main():\n    return 6 * 7\n")
    assert result.status == Status.CORRECT and result.feedback == "42", result


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_program_gets_right_status(evaluator, kind):
    code, status, needle = HOSTILE[kind]
    start = time.monotonic()
    result = evaluator.evaluate("ref", code)
    assert result.status == status, (kind, result.status, result.error)
    assert needle.lower() in (result.error or "").lower(), (kind, result.error)
    assert result.attempts == 1, "a candidate fault must never be retried"
    assert time.monotonic() - start < 20
    if status == Status.TIMEOUT:
        assert result.isolation["wall_clock_s"] == pytest.approx(3.5)
    _ok(evaluator)  # the pool keeps serving


def test_fork_bomb_is_contained_and_fully_killed(evaluator):
    code = "import os\ndef main():\n    while True:\n        try:\n            os.fork()\n        except OSError:\n            pass\n"
    result = evaluator.evaluate("ref", code, timeout=2)
    assert result.status == Status.TIMEOUT, result.error
    uid = result.isolation.get("uid")
    if uid is not None:
        deadline = time.monotonic() + 10
        while processes_of_uid(uid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_of_uid(uid) == [], "fork-bomb processes survived the kill"
        assert result.isolation["rlimits"]["processes"] == 48
    _ok(evaluator)


def test_fifty_megabytes_of_printing_is_truncated_not_fatal(evaluator):
    code = "import sys\ndef main():\n    line = 'x' * 1023 + '\\n'\n    for _ in range(50 * 1024):\n        sys.stdout.write(line)\n    return 'done'\n"
    result = evaluator.evaluate("ref", code, timeout=60)
    assert result.status == Status.CORRECT and result.feedback == "'done'", result.error
    limit = SandboxLimits().output_bytes
    assert len(result.stdout_tail) < limit + 200
    assert "bytes of output dropped" in result.stdout_tail


def test_host_memory_watchdog_kills_a_growing_process():
    policy = SandboxPolicy(limits=SandboxLimits(address_space_bytes=None, memory_bytes=900 * 1024**2))
    code = (
        "import time\nchunks = []\ndef main():\n    for _ in range(40):\n"
        "        chunks.append(b'\\x01' * (100 << 20))\n        time.sleep(0.05)\n"
    )
    with Evaluator(device="cpu", workers=1, timeout=30, policy=policy, worker_module=FAKE) as ev:
        result = ev.evaluate("ref", code)
        assert result.status == Status.RUNTIME_ERROR, result.error
        assert "memory limit exceeded" in result.error
        _ok(ev)


def test_host_memory_watchdog_counts_forked_helpers():
    """Memory held by forked helpers counts: three 400 MB children exceed 900 MB while the main process is small."""
    policy = SandboxPolicy(limits=SandboxLimits(address_space_bytes=None, memory_bytes=900 * 1024**2))
    code = (
        "import os, time\ndef main():\n    pids = []\n    for _ in range(3):\n        pid = os.fork()\n"
        "        if pid == 0:\n            block = b'\\x01' * (400 << 20)\n            time.sleep(6)\n            os._exit(0)\n"
        "        pids.append(pid)\n    for pid in pids:\n        os.waitpid(pid, 0)\n    return 'survived'\n"
    )
    with Evaluator(device="cpu", workers=1, timeout=30, policy=policy, worker_module=FAKE) as ev:
        result = ev.evaluate("ref", code)
        assert result.status == Status.RUNTIME_ERROR, (result.status, result.feedback, result.error)
        assert "memory limit exceeded" in result.error and "helper processes" in result.error
        _ok(ev)


@needs_root
def test_host_memory_watchdog_counts_files_in_the_private_tmpfs():
    """Files in the child's private /tmp are memory too (tmpfs): 1000 MiB of them exceed a 900 MiB budget while the
    process itself stays small."""
    policy = SandboxPolicy(limits=SandboxLimits(address_space_bytes=None, memory_bytes=900 * 1024**2))
    code = (
        "import time\ndef main():\n    for i in range(4):\n"
        "        with open(f'/tmp/fill{i}', 'wb') as f:\n"
        "            for _ in range(25):\n                f.write(b'\\x01' * (10 << 20))\n"
        "    time.sleep(6)\n    return 'survived'\n"
    )
    with Evaluator(device="cpu", workers=1, timeout=30, policy=policy, worker_module=FAKE) as ev:
        result = ev.evaluate("ref", code)
        assert result.status == Status.RUNTIME_ERROR, (result.status, result.feedback, result.error)
        assert "memory limit exceeded" in result.error and "tmpfs" in result.error
        _ok(ev)


def test_private_uids_are_never_handed_out_twice():
    """Judge and runner uids come in pairs from random blocks; a used-up block is followed by a fresh one, and no
    uid comes back (a keyring or file left under a uid cannot reach a later candidate)."""
    from kernel_reward.service.zygote import UID_BLOCK, UID_CEILING, UID_FLOOR, UidPairs, runner_uid_of

    pairs = UidPairs(UID_FLOOR)
    judges = [pairs.take() for _ in range(UID_BLOCK // 2 + 10)]
    every_uid = judges + [runner_uid_of(uid) for uid in judges]
    assert len(set(every_uid)) == len(every_uid)
    assert judges[: UID_BLOCK // 2] == list(range(UID_FLOOR, UID_FLOOR + UID_BLOCK, 2))
    assert all(UID_FLOOR <= uid < UID_CEILING and uid % 2 == 0 for uid in judges)
    with pytest.raises(ValueError, match="uid_base"):
        UidPairs(UID_FLOOR + 1)


@needs_root
def test_isolation_record_is_full_as_root(evaluator):
    result = evaluator.evaluate("ref", "def main():\n    return 1\n")
    iso = result.isolation
    assert iso["level"] == "full", iso
    assert iso["network_namespace"] and iso["mount_namespace"] and iso["private_tmp"]
    assert iso["uid"] not in (None, 0)
    assert iso["rlimits"]["core_bytes"] == 0 and iso["rlimits"]["open_files"] == 512
    assert iso["ipc_namespace"] and iso["uts_namespace"] and iso["no_new_privs"] and iso["syscall_filter"]
    again = evaluator.evaluate("ref", "def main():\n    return 1\n")
    assert again.isolation["uid"] not in (None, 0, iso["uid"])


@needs_root
def test_sockets_cannot_reach_the_host(evaluator):
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    server.settimeout(3)
    accepted = []
    threading.Thread(target=lambda: accepted.append(_accept(server)), daemon=True).start()
    code = (
        f"import socket\ndef main():\n    try:\n        socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "        return 'connected'\n    except OSError as exc:\n        return type(exc).__name__ + ': ' + str(exc)\n"
    )
    result = evaluator.evaluate("ref", code)
    server.close()
    assert result.status == Status.CORRECT
    assert "connected" not in result.feedback.replace("not connected", ""), result.feedback
    assert accepted in ([], [None])


def _accept(server):
    try:
        return server.accept()
    except OSError:
        return None


@needs_root
def test_writes_outside_its_dir_do_not_reach_the_host(evaluator, tmp_path):
    token = uuid.uuid4().hex
    repo_target = Path(__file__).parent / f"escape-{token}.txt"
    os.chmod(tmp_path, 0o777)  # even a world-writable host directory is out of reach
    host_target = tmp_path / f"escape-{token}.txt"
    code = (
        "def main():\n    out = {}\n"
        f"    for path in [{str(repo_target)!r}, {str(host_target)!r}, '/tmp/escape-{token}.txt', 'inside.txt']:\n"
        "        try:\n            open(path, 'w').write('pwned')\n            out[path] = 'written'\n"
        "        except OSError as exc:\n            out[path] = type(exc).__name__\n    return out\n"
    )
    result = evaluator.evaluate("ref", code)
    outcome = eval(result.feedback)  # our own fake worker's repr of a dict of str
    assert outcome["inside.txt"] == "written"
    # EACCES for the private uid; EROFS (a plain OSError) where the checkout lies under a directory the sandbox
    # covers with a tmpfs and binds our code back read-only (a clone under /tmp, as CI may use).
    assert outcome[str(repo_target)] in ("PermissionError", "OSError")
    assert not repo_target.exists()
    assert not Path(f"/tmp/escape-{token}.txt").exists(), "a write to /tmp reached the host's /tmp"
    assert not host_target.exists()


@needs_root
def test_cannot_read_protected_or_other_candidates_files(evaluator):
    secret = uuid.uuid4().hex
    writer = (
        "import time, os\ndef main():\n"
        f"    open('secret.txt', 'w').write({secret!r})\n    time.sleep(2)\n    return os.getcwd()\n"
    )
    # The reader reports only files that hold the secret: /tmp may also show our own code, bound back read-only
    # when the checkout lives under /tmp, and returning every file's text would swamp the feedback.
    reader = (
        "import os\ndef main():\n    found = []\n"
        "    for top in ['/tmp', '/var/tmp', '/dev/shm']:\n"
        "        for root, dirs, files in os.walk(top):\n"
        # its own bytecode cache holds the secret (the compiler folds the two halves): skip caches; and a
        # checkout under /tmp (a CI clone) is bound back read-only with its .venv: thousands of files, ours
        f"            if '__pycache__' in root or root.startswith({str(Path(__file__).resolve().parents[3])!r}):\n"
        "                dirs[:] = []\n                continue\n"
        "            for name in files:\n"
        "                try:\n                    text = open(os.path.join(root, name), errors='ignore').read(4096)\n"
        "                except OSError:\n                    continue\n"
        # the secret is joined at run time so that the reader's own source file does not contain it
        f"                if {secret[:16]!r} + {secret[16:]!r} in text:\n                    found.append(os.path.join(root, name))\n"
        "    try:\n        open('/etc/shadow').read()\n        shadow = 'read'\n"
        "    except OSError as exc:\n        shadow = type(exc).__name__\n    return (found, shadow)\n"
    )
    first = evaluator.submit("ref", writer)
    time.sleep(0.5)
    found, shadow = eval(evaluator.evaluate("ref", reader).feedback)
    assert first.result().status == Status.CORRECT
    assert found == [], f"another candidate's file was readable: {found}"
    if Path("/etc/shadow").exists():
        assert shadow == "PermissionError"


def test_infrastructure_failure_in_warmup_is_retried_then_reported():
    with Evaluator(
        device="cpu",
        workers=1,
        timeout=5,
        worker_module=FAKE,
        max_attempts=2,
        pool_options={"env": {"FAKE_WORKER_FAIL_WARMUP": "1"}},
    ) as ev:
        result = ev.evaluate("ref", "def main():\n    return 1\n")
    assert result.status == Status.CRASHED
    assert "infrastructure failure" in result.error and "warm-up" in result.error
    assert result.attempts == 2


def test_killed_warm_children_and_zygote_are_replaced(evaluator):
    pool = evaluator.backend.pools[0]
    _ok(evaluator)
    time.sleep(1.0)  # let every slot's next child finish warming
    zygote = pool.zygote
    with zygote.lock:
        warm = list(zygote.children)
    assert warm, "expected warm children"
    for pid in warm:
        os.kill(pid, 9)  # an infrastructure fault: nobody's candidate did this
    results = [evaluator.evaluate("ref", "def main():\n    return 6 * 7\n") for _ in range(2)]
    assert all(r.status == Status.CORRECT for r in results), [r.error for r in results]
    assert max(r.attempts for r in results) >= 2, "the dead warm child should have cost a retry"
    os.kill(pool.zygote.process.pid, 9)
    time.sleep(0.3)
    results = [evaluator.evaluate("ref", "def main():\n    return 6 * 7\n") for _ in range(3)]
    assert all(r.status == Status.CORRECT for r in results), [r.error for r in results]


# ----------------------------------------------------------------------------- real worker, real Triton candidates


@pytest.fixture(scope="module")
def real_evaluator():
    with Evaluator(device="cpu", workers=2, timeout=20, pool_options={"wall_clock_grace_s": 0.5}) as ev:
        yield ev


REAL = {
    "honest": (programs.CANDIDATE_ADD, Status.CORRECT),
    "wrong_result": (programs.CANDIDATE_WRONG, Status.INCORRECT),
    "syntax_error": (programs.CANDIDATE_SYNTAX_ERROR, Status.COMPILE_ERROR),
    "raising_forward": (programs.CANDIDATE_RAISES, Status.RUNTIME_ERROR),
    "passthrough": (programs.CANDIDATE_PASSTHROUGH, Status.HACKED),
    "out_of_bounds_crash": (programs.CANDIDATE_OOB_CRASH, Status.CRASHED),
}


@pytest.mark.parametrize("kind", sorted(REAL))
def test_real_worker_faults(real_evaluator, kind):
    code, status = REAL[kind]
    result = real_evaluator.evaluate(programs.REFERENCE_ADD, programs.fenced(code))
    assert result.status == status, (kind, result.error)
    if kind == "syntax_error":  # the service's static screen answers without taking a worker
        assert result.attempts == 0 and result.isolation["level"] == "not_run", result.isolation
        assert "screen" in result.phase_seconds and "load" not in result.phase_seconds
        return
    assert result.attempts == 1
    assert result.isolation.get("wall_clock_s") == pytest.approx(20.5)


def test_statically_rejected_candidates_take_no_worker(real_evaluator):
    """Format errors, syntax errors and static hacks are answered by the service itself: the pool's warm
    children stay untouched (no spawn beyond the spares the slots keep), and the results are complete."""
    pool = real_evaluator.backend.pools[0]
    real_evaluator.evaluate(
        programs.REFERENCE_ADD, programs.fenced(programs.CANDIDATE_ADD)
    )  # slots are warm now
    spawned = pool.spawned
    cases = [
        ("no code block here", Status.FORMAT_ERROR),
        (programs.fenced(programs.CANDIDATE_SYNTAX_ERROR), Status.COMPILE_ERROR),
        (programs.fenced(programs.CANDIDATE_TRY_EXCEPT), Status.HACKED),
    ]
    results = real_evaluator.evaluate_many([(programs.REFERENCE_ADD, text) for text, _ in cases])
    assert [r.status for r in results] == [status for _, status in cases], [r.error for r in results]
    assert all(
        r.isolation["level"] == "not_run" and r.attempts == 0 and r.error and r.feedback for r in results
    )
    assert results[2].hack_reasons == ["try_except"] and results[2].reward <= 0
    assert pool.spawned == spawned


def test_real_worker_hang_times_out(real_evaluator):
    result = real_evaluator.evaluate(
        programs.REFERENCE_ADD, programs.fenced(programs.CANDIDATE_HANGS), timeout=2
    )
    assert result.status == Status.TIMEOUT, result.error
    ok = real_evaluator.evaluate(programs.REFERENCE_ADD, programs.fenced(programs.CANDIDATE_ADD))
    assert ok.status == Status.CORRECT, ok.error


def test_runtime_tools_work_inside_the_sandbox(evaluator):
    # Regression (seen on the GPU host): under a private uid with no passwd entry, getpass.getuser() raised and
    # torch's inductor/profiler start-up failed, which broke the profiling (coverage) phase.
    code = (
        "import getpass, tempfile, torch\nfrom torch.profiler import ProfilerActivity, profile\n"
        "def main():\n    import torch._inductor.config\n"
        "    with profile(activities=[ProfilerActivity.CPU]) as prof:\n        torch.ones(8).sum()\n"
        "    with tempfile.NamedTemporaryFile() as f:\n        f.write(b'x')\n"
        "    return (getpass.getuser(), len(prof.events()) > 0)\n"
    )
    result = evaluator.evaluate("ref", code, timeout=60)
    assert result.status == Status.CORRECT, result.error
    user, profiled = eval(result.feedback)
    assert profiled and user


def test_waiting_for_the_timing_slot_does_not_count_against_the_wall_clock():
    # Both candidates hold the (per-device) timing slot for 1.5 s; the second queues ~1.5 s for it. With a 2 s
    # timeout (+0.5 s grace) the second would be killed if the queueing counted.
    code = "import time\ndef main():\n    time.sleep(1.5)\n    return 'timed'\n"
    with Evaluator(
        device="cpu",
        workers=2,
        timeout=2,
        worker_module=FAKE,
        pool_options={"wall_clock_grace_s": 0.5, "lock_dir": None},
    ) as ev:
        ev.evaluate("ref", "def main():\n    return 0\n")  # both slots warm
        futures = [ev.submit("ref", code) for _ in range(2)]
        results = [f.result(timeout=60) for f in futures]
    assert [r.status for r in results] == [Status.CORRECT, Status.CORRECT], [r.error for r in results]
    assert max(r.isolation.get("slot_wait_s", 0.0) for r in results) > 0.5
