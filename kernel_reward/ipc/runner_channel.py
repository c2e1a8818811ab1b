"""The judge's end of the runner: its process handle, starting it as a fresh interpreter, waiting for its
warm-up, and ``RunnerClient``: one request, one validated reply. A reply that is not a well-formed frame of an
expected type, or an end of file, is the candidate's fault (``RunnerFault``), never a result."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_reward import sandbox
from kernel_reward.ipc import ledger_build, wire
from kernel_reward.ipc.ledger import LedgerReader
from kernel_reward.runtime import PACKAGE_DIR, SOURCE_ROOT

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
    ledger: Any = None  # the launch ledger's LedgerReader, when the runner was started with one
    ledger_state: str | None = None  # the runner's word on its ledger: "started", or why not
    clock_stamp: int | None = None  # the GPU clock's reading right after its known-answer kernel (gpu_clock)
    clock_stamp_error: str | None = None  # why the runner could not read it
    load_clock_stamp: int | None = None  # its reading just before the candidate was loaded (read_load_clock)

    def close(self) -> None:
        """End the runner: say bye, close the channel, kill what is left of its process group, reap it."""
        with contextlib.suppress(OSError, wire.WireError):
            wire.send_message(self.channel, {"type": "bye"})
        self.channel.close()
        if self.ledger is not None:
            self.ledger.close()
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


def spawn_runner_exec(
    device: str,
    policy: sandbox.SandboxPolicy,
    *,
    uid: int | None = None,
    launch_ledger: bool = False,
) -> RunnerProcess:
    """Start a sandboxed runner as a fresh interpreter (``python -m kernel_reward.runner.process``): for callers
    that may already hold a CUDA context (a forked child could not create its own). Its own session, so the
    whole group can be killed. ``uid``: None picks a random private uid when running as root.
    ``launch_ledger``: build the ledger (``ipc.ledger_build``, cached) and start it in the runner on a pipe only this
    process reads; where it cannot be built, ``ledger_state`` says why."""
    import json
    import random
    import subprocess

    if uid is None and os.geteuid() == 0 and policy.drop_privileges:
        uid = random.randrange(2_000_000, 2_100_000_000)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = {
        name: os.environ[name] for name in sandbox.ENV_ALLOW_LIST if name in os.environ
    }  # no tokens or keys
    package_root = str(SOURCE_ROOT)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    config = {"device": device, "policy": policy.to_dict(), "uid": uid, "expose": interpreter_paths()}
    library, unavailable = (
        ledger_build.build_or_reason(ledger_build.default_cache_dir()) if launch_ledger else (None, None)
    )
    ledger_r, ledger_w = os.pipe() if library is not None else (None, None)
    if library is not None:
        config.update(ledger_library=str(library), ledger_fd=ledger_w)
    popen = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kernel_reward.runner.process",
            "--fd",
            str(theirs.fileno()),
            "--config",
            json.dumps(config),
        ],
        pass_fds=[theirs.fileno(), *([ledger_w] if ledger_w is not None else [])],
        env=env,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    theirs.close()
    process = RunnerProcess(popen.pid, ours)
    process.popen = popen
    process.ledger_state = unavailable
    if ledger_r is not None:
        os.close(ledger_w)
        process.ledger = LedgerReader(ledger_r)
        process.ledger.start()  # this process is not sandboxed further: it may be multi-threaded now
    return process


def interpreter_paths(*modules: Any) -> list[str]:
    """What an unprivileged child must still reach: the interpreter, its stdlib and site-packages, our package,
    and the folders of ``modules`` (a worker module outside it)."""
    paths = {sys.executable, sys.prefix, sys.base_prefix, *[p for p in sys.path if p], str(PACKAGE_DIR)}
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
    if message.get("ledger") is not None:  # else keep the judge's own reason (a ledger never built)
        process.ledger_state = str(message["ledger"])[:500]
    stamp = message.get("clock_stamp")
    process.clock_stamp = _reading(stamp)
    if isinstance(stamp, str):
        process.clock_stamp_error = stamp[:300]


def _reading(value: Any) -> int | None:
    """Pure: a reading of the GPU's clock as the runner reported it, kept only as a positive int."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_load_clock(client: RunnerClient) -> None:
    """Ask a runner with a live ledger and a start-up reading for a second reading of the GPU's clock, before the
    candidate is loaded: with the first, it measures how CUPTI's timestamps drift from that clock
    (``timing.ledger_clock.runner_anchor``). A runner that cannot answer leaves the first alone, with why."""
    process = client.process
    if process.ledger_state != "started" or process.clock_stamp is None:
        return
    reply = client.ask({"type": "clock"}, ("clock", "error"))
    process.load_clock_stamp = _reading(reply.get("reading"))
    if process.load_clock_stamp is None:
        process.clock_stamp_error = f"no reading before the load: {str(reply.get('error'))[:250]}"


class RunnerClient:
    """The judge's end of the channel: ``ask`` sends one request and returns its validated reply."""

    def __init__(self, process: RunnerProcess, deadline: float | None = None) -> None:
        self.process = process
        self.channel = process.channel
        # time.monotonic() by which the runner must have answered everything: the one-shot path's own wall clock
        # (the execution service enforces its own on the whole pair and leaves this None).
        self.deadline = deadline
        # Calls sent that must launch one of the candidate's own kernels (monitored, not ablated, not dry), checked
        # and timed alike: what the launch ledger's records must show. Counted here, where every run message goes.
        self.counted_calls = 0
        # Messages that may run kernels outside the judge's clock (``outside_the_clock``): the launch ledger's
        # cross-check with the judge's clock holds only for a window without them.
        self.unclocked_messages = 0

    def send_fds(self, fds: list[int]) -> None:
        socket.send_fds(self.channel, [b"F"], fds)

    def ask(
        self, message: dict[str, Any], expect: tuple[str, ...], fds: list[int] | None = None
    ) -> dict[str, Any]:
        self.counted_calls += calls_owing_own_kernels(message)
        self.unclocked_messages += outside_the_clock(message)
        try:
            wire.send_message(self.channel, message)
            if fds:
                self.send_fds(fds)
        except OSError as exc:
            raise RunnerFault(
                "died", f"the candidate's process is gone (sending {message['type']!r}: {exc})"
            ) from exc
        if self.deadline is not None:
            self.channel.settimeout(max(self.deadline - time.monotonic(), 0.001))
        try:
            reply = wire.recv_message_blocking(self.channel, MAX_REPLY_BYTES)
        except TimeoutError as exc:
            raise RunnerFault(
                "timeout",
                f"the candidate's process did not answer {message['type']!r} within the wall-clock limit",
            ) from exc
        except wire.WireError as exc:
            raise RunnerFault("protocol", f"the candidate's process sent a malformed reply: {exc}") from exc
        except OSError as exc:
            raise RunnerFault("died", f"the candidate's process is gone ({exc})") from exc
        if reply is None:
            raise RunnerFault("died", f"the candidate's process exited while running {message['type']!r}")
        kind = reply.get("type")
        if kind == "error" and "error" not in expect:
            raise RunnerFault(
                "error",
                f"the candidate's process failed on {message['type']!r}: {str(reply.get('error'))[:2000]}",
            )
        if kind not in expect:
            raise RunnerFault(
                "protocol",
                f"unexpected reply {str(kind)[:50]!r} to {message['type']!r} (expected {' / '.join(expect)})",
            )
        return reply


KERNEL_FREE_MESSAGES = frozenset({"ping", "ledger", "memory_cap", "arena", "sync"})


def outside_the_clock(message: dict[str, Any]) -> bool:
    """Pure: whether ``message`` may make the runner launch kernels that no gate holds behind the judge's clock
    (a load, a build, a buffer reset, a coverage pass, a run without a gate)."""
    return message.get("type") not in KERNEL_FREE_MESSAGES and message.get("gate") is None


def calls_owing_own_kernels(message: dict[str, Any]) -> int:
    """Pure: how many calls of ``message`` must launch an own kernel (a run message's monitored, non-ablated calls;
    none in a dry run, which calls no candidate)."""
    if message.get("type") != "run" or message.get("dry"):
        return 0
    return sum(1 for call in message["calls"] if call["monitor"] and not call["ablate"])
