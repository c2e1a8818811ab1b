"""Starting the untrusted runner, and the judge's end of its channel.

``spawn_runner`` forks the runner from the judge BEFORE the judge creates a CUDA context (a forked process must
not inherit one) and, in the child, applies every sandbox layer before any candidate code can arrive:

  fresh mount + network namespace with new private tmpfs over /tmp, /var/tmp, /dev/shm (the judge's files, the
  reference among them, are not in them) -> PID namespace (the runner is pid 1 and sees only itself in a fresh
  /proc) -> read-only file system except its private tmpfs -> clean environment (an allow-list) -> its own
  private uid -> CUDA context / Triton known-answer check -> rlimits -> "ready".

``RunnerClient`` is the judge's end: one request, one reply, and every reply is validated. A reply that is not a
well-formed frame of an expected type, or an end of file, is the candidate's fault (``RunnerFault``), never a
result.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from kernel_reward import sandbox, wire

RUNNER_ROOT = Path("/tmp/runner")  # inside the runner's own private tmpfs
MAX_REPLY_BYTES = 8 * 1024 * 1024  # nothing the runner legitimately sends comes near this


class RunnerFault(Exception):
    """The runner died, or sent something that is not a valid reply: the candidate's fault."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        # "died" | "protocol" (a frame an honest runner never sends) | "error" (its own failure) | "timeout"
        self.kind = kind


@dataclass
class RunnerProcess:
    """The judge's handle on one runner: its pid (as the judge sees it), channel and warm-up report."""

    pid: int
    channel: socket.socket
    isolation: dict[str, Any] = field(default_factory=dict)
    warmup_seconds: dict[str, float] = field(default_factory=dict)
    reaped: bool = False
    popen: Any = None  # the subprocess.Popen of an exec'd runner (spawn_runner_exec)

    def close(self) -> None:
        """End the runner: say bye, close the channel, kill what is left of its process group, reap it."""
        with contextlib.suppress(OSError, wire.WireError):
            wire.send_message(self.channel, {"type": "bye"})
        self.channel.close()
        if not self.reaped:
            sandbox.kill_process_group(self.pid)
            uid = self.isolation.get("uid")
            if uid is not None:
                sandbox.kill_uid_processes(int(uid))
            if self.popen is not None:
                self.popen.wait()
            else:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.pid, 0)
            self.reaped = True


def spawn_runner(device: str, policy: sandbox.SandboxPolicy, *, uid: int | None, expose: list[str],
                 seed_files: dict[str, bytes] | None = None, gpu_memory_fraction: float | None = None) -> RunnerProcess:
    """Fork a sandboxed runner for ``device`` ("cpu" or "cuda"). The caller must not hold a CUDA context yet."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        ours.close()
        _runner_main(theirs, device, policy, uid, expose, seed_files or {}, gpu_memory_fraction)
    theirs.close()
    return RunnerProcess(pid, ours)


def spawn_runner_exec(device: str, policy: sandbox.SandboxPolicy, *, uid: int | None = None) -> RunnerProcess:
    """Start a sandboxed runner as a fresh interpreter (``python -m kernel_reward.runner_process``): for callers
    that may already hold a CUDA context (a forked child could not create its own). Its own session, so the
    whole group can be killed. ``uid``: None picks a random private uid when running as root."""
    import json
    import random
    import subprocess

    if uid is None and os.geteuid() == 0 and policy.drop_privileges:
        uid = random.randrange(2_000_000, 2_100_000_000)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = {name: os.environ[name] for name in sandbox.ENV_ALLOW_LIST if name in os.environ}  # no tokens or keys
    package_root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    config = {"device": device, "policy": policy.to_dict(), "uid": uid, "expose": interpreter_paths()}
    popen = subprocess.Popen([sys.executable, "-m", "kernel_reward.runner_process", "--fd", str(theirs.fileno()),
                              "--config", json.dumps(config)], pass_fds=[theirs.fileno()], env=env,
                             stdin=subprocess.DEVNULL, start_new_session=True)
    theirs.close()
    process = RunnerProcess(popen.pid, ours)
    process.popen = popen
    return process


def interpreter_paths(*modules: Any) -> list[str]:
    """What an unprivileged child must still reach: the interpreter, its stdlib and site-packages, our package,
    and the folders of ``modules`` (a worker module outside it)."""
    paths = {sys.executable, sys.prefix, sys.base_prefix, *[p for p in sys.path if p],
             str(Path(__file__).resolve().parent)}
    paths.update(str(Path(m.__file__).parent) for m in modules if getattr(m, "__file__", None))
    return sorted(paths)


def wait_ready(process: RunnerProcess) -> None:
    """Block until the runner is warm; raise RuntimeError (an infrastructure failure) when it is not."""
    message = wire.recv_message_blocking(process.channel)
    if message is None:
        raise RuntimeError("runner exited during its warm-up")
    if message.get("type") != "ready":
        raise RuntimeError(f"runner warm-up failed: {str(message.get('error'))[-2000:]}")
    process.isolation = dict(message.get("isolation") or {})
    process.warmup_seconds = {str(k): float(v) for k, v in (message.get("warmup") or {}).items()}


def _runner_main(channel: socket.socket, device: str, policy: sandbox.SandboxPolicy, uid: int | None,
                 expose: list[str], seed_files: dict[str, bytes], gpu_memory_fraction: float | None) -> NoReturn:
    code = 70
    stage = "sandbox"
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        keep = sorted({0, 1, 2, channel.fileno()})
        sandbox.close_fds_except(keep)
        sandbox.set_parent_death_signal()
        isolation = sandbox.Isolation.for_policy(policy)
        isolation.process = "runner: forked by the judge, sandboxed before the candidate arrives"
        root = os.geteuid() == 0
        sandbox.enter_namespaces(policy, isolation, expose=expose)
        sandbox.enter_pid_namespace(policy, isolation)
        home = _private_tree(uid if root else None, seed_files)
        if policy.read_only_filesystem:
            sandbox.make_filesystem_read_only(isolation, writable=list(sandbox.PRIVATE_TMPFS_MOUNTS))
        environment = {
            "HOME": str(home), "TMPDIR": str(home), "TRITON_CACHE_DIR": str(home / "triton-cache"),
            "TRITON_HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"),
            "TORCHINDUCTOR_CACHE_DIR": str(home / "inductor"),
            # torch.compile off: compiler-generated kernels are not the candidate's work (KernelBench issue #166);
            # a call the static screen missed then runs as plain torch and counts as torch in coverage
            "TORCH_COMPILE_DISABLE": "1",
            # One hardware work queue: the runner needs no more (one stream; side streams are screened out and
            # only slow a candidate down), and its CUDA context is created 4x faster when 16 processes create
            # theirs at once (H200: 0.71 s against 2.75 s median, benchmarks/context_probe.py), which is what a
            # warm pool does all the time
            "CUDA_DEVICE_MAX_CONNECTIONS": "1",
            **({"USER": f"sandbox{uid}", "LOGNAME": f"sandbox{uid}"} if uid is not None and root else {}),
        }
        if policy.clean_environment:
            isolation.env_kept = sandbox.clean_environment(sandbox.ENV_ALLOW_LIST, environment)
        else:
            os.environ.update(environment)
        sandbox.drop_privileges(policy, isolation, uid)
        os.chdir(home / "work")
        stage = "warmup"
        from kernel_reward.worker import prepare_worker

        info = prepare_worker(device)
        import torch

        if info.mode == "gpu" and gpu_memory_fraction is not None:
            torch.cuda.set_per_process_memory_fraction(gpu_memory_fraction)
            isolation.gpu_memory_fraction = gpu_memory_fraction
        sandbox.apply_rlimits(policy.limits, isolation, address_space=info.mode != "gpu")
        from kernel_reward.runner import Runner

        runner = Runner(channel, torch.device(info.device), home / "work")
        wire.send_message(channel, {"type": "ready", "isolation": isolation.to_dict(), "pid": os.getpid(),
                                    "warmup": info.warmup_seconds})
        stage = "serving"
        runner.serve()
        code = 0
    except BaseException:  # noqa: BLE001 - report whatever happened and exit; never return into the judge's code
        with contextlib.suppress(BaseException):
            wire.send_message(channel, {"type": "error", "stage": stage, "error": traceback.format_exc(limit=20)})
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _private_tree(uid: int | None, seed_files: dict[str, bytes]) -> Path:
    """The runner's home, work dir and Triton cache (seeded with the trusted pre-compiled launcher stubs)."""
    home = sandbox.make_private_dir(RUNNER_ROOT, uid)
    for sub in ("work", "triton-cache", ".cache", "inductor"):
        sandbox.make_private_dir(home / sub, uid)
    cache = home / "triton-cache"
    for rel, data in seed_files.items():
        target = cache / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if uid is not None:
        for path in cache.rglob("*"):
            os.chown(path, uid, uid)
    return home


class RunnerClient:
    """The judge's end of the channel: ``ask`` sends one request and returns its validated reply."""

    def __init__(self, process: RunnerProcess, deadline: float | None = None) -> None:
        self.process = process
        self.channel = process.channel
        # time.monotonic() by which the runner must have answered everything: the one-shot path's own wall clock
        # (the execution service enforces its own on the whole pair and leaves this None).
        self.deadline = deadline

    def send_fds(self, fds: list[int]) -> None:
        socket.send_fds(self.channel, [b"F"], fds)

    def ask(self, message: dict[str, Any], expect: tuple[str, ...], fds: list[int] | None = None) -> dict[str, Any]:
        try:
            wire.send_message(self.channel, message)
            if fds:
                self.send_fds(fds)
        except OSError as exc:
            raise RunnerFault("died", f"the candidate's process is gone (sending {message['type']!r}: {exc})") from exc
        if self.deadline is not None:
            self.channel.settimeout(max(self.deadline - time.monotonic(), 0.001))
        try:
            reply = wire.recv_message_blocking(self.channel, MAX_REPLY_BYTES)
        except TimeoutError as exc:
            raise RunnerFault("timeout", f"the candidate's process did not answer {message['type']!r} within the "
                                         "wall-clock limit") from exc
        except wire.WireError as exc:
            raise RunnerFault("protocol", f"the candidate's process sent a malformed reply: {exc}") from exc
        except OSError as exc:
            raise RunnerFault("died", f"the candidate's process is gone ({exc})") from exc
        if reply is None:
            raise RunnerFault("died", f"the candidate's process exited while running {message['type']!r}")
        kind = reply.get("type")
        if kind == "error" and "error" not in expect:
            raise RunnerFault("error", f"the candidate's process failed on {message['type']!r}: "
                                       f"{str(reply.get('error'))[:2000]}")
        if kind not in expect:
            raise RunnerFault("protocol", f"unexpected reply {str(kind)[:50]!r} to {message['type']!r} "
                                          f"(expected {' / '.join(expect)})")
        return reply


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m kernel_reward.runner_process",
                                     description="A sandboxed candidate runner (started by the judge, not by hand).")
    parser.add_argument("--fd", type=int, required=True, help="inherited stream socket to the judge")
    parser.add_argument("--config", required=True, help="JSON: device, policy, uid, expose")
    args = parser.parse_args(argv)
    config = json.loads(args.config)
    policy = sandbox.SandboxPolicy.from_dict(config["policy"])
    _runner_main(socket.socket(fileno=args.fd), config["device"], policy, config.get("uid"), config["expose"], {}, None)


if __name__ == "__main__":
    main()
