"""Warm per-device process pools: scheduling, wall clock, kills and bounded infrastructure retries.

One ``DevicePool`` per device (each GPU, or the CPU in interpreter mode) owns a zygote process
(``kernel_reward.zygote``) and ``workers`` slot threads. Every slot keeps one child warming in the background while
it runs a candidate on another, so process start-up, imports, CUDA context creation and the worker's self-check
stay off the critical path. Each child serves exactly one candidate and is then killed with its whole process
group (and every process of its private uid).

Outcomes of one attempt:

* the child died or failed before it accepted the request -> infrastructure failure: retried on a fresh child,
  at most ``max_attempts`` times in all, and counted in ``EvalResult.attempts`` (never as an extra result);
* it accepted the request and then died -> ``crashed`` (the candidate killed its worker; never retried);
* it outlived its wall clock -> ``timeout``; it outgrew its memory limit -> ``runtime_error``.

All slot threads of all pools pull from one shared queue, so GPUs balance themselves.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import logging
import os
import queue
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel_reward import sandbox, wire
from kernel_reward.gpu_lock import TURNSTILE_SUFFIX
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult, Status

log = logging.getLogger(__name__)

GROUP_SCAN_INTERVAL_S = 0.5  # the /proc scan for a candidate's helper processes; its main process every 0.1 s
POOL_ID_ENV = "KERNEL_REWARD_POOL_ID"  # set in every zygote (and so every child): lets tests find leaks


@dataclass
class PoolConfig:
    """How one device's pool runs its children."""

    device: str = "cpu"  # "cpu" or "cuda:N" (a physical index as the service sees it)
    workers: int = 2  # candidates evaluated concurrently on this device (timing is still exclusive per GPU)
    # Children each slot keeps warming ahead of need. A GPU child's warm-up (CUDA context, self-check, profiler
    # start-up: seconds) is longer than most evaluations, so one spare per slot leaves slots waiting on it.
    warm_spares: int = 1
    policy: sandbox.SandboxPolicy = field(default_factory=sandbox.SandboxPolicy)
    worker_module: str = "kernel_reward.worker"
    warmup_timeout_s: float = 180.0
    max_attempts: int = 3  # executions of one request in all (1 + infrastructure retries)
    wall_clock_grace_s: float = 2.0  # added to the request's timeout_s before the kill
    max_slot_wait_s: float = 600.0  # waiting for the GPU's timing slot pauses the wall clock, at most this long
    gpu_memory_fraction: float | None = None  # None: 0.9 / workers on a GPU
    lock_dir: str | None = None  # where per-GPU timing locks live (shared across services on one host)
    # Hold the GPU alone while timing: the other children's GPU phases (builds, correctness, shape checks) wait
    # for it (gpu_lock). Off by default: on the H200 (8 workers, 64 mixed pairs, 2026-12-03) it cut throughput from
    # 80 to 50 evaluations a minute; what it buys in timing fidelity under load is not measured yet.
    exclusive_gpu_timing: bool = False
    env: dict[str, str] = field(default_factory=dict)  # environment of the zygote beyond sandbox.ENV_ALLOW_LIST

    def __post_init__(self) -> None:
        if self.device != "cpu" and not (self.device.startswith("cuda:") and self.device[5:].isdigit()):
            raise ValueError(f"PoolConfig.device must be 'cpu' or 'cuda:N', got {self.device!r}")
        if self.workers < 1:
            raise ValueError(f"PoolConfig.workers must be >= 1, got {self.workers}")
        if self.warm_spares < 1:
            raise ValueError(f"PoolConfig.warm_spares must be >= 1, got {self.warm_spares}")
        if self.max_attempts < 1:
            raise ValueError(f"PoolConfig.max_attempts must be >= 1, got {self.max_attempts}")


@dataclass
class Job:
    """One request on its way through the pool."""

    request: EvalRequest
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    cancel: threading.Event = field(default_factory=threading.Event)
    attempts: int = 0


class InfrastructureError(RuntimeError):
    """The execution machinery failed (not the candidate): the request may be retried."""


# ------------------------------------------------------------------------------------------------ zygote client


class ChildHandle:
    """The service's ends of one forked child: its channel, its output pipe and its exit code (when known)."""

    def __init__(self, pid: int, channel: socket.socket, output_fd: int) -> None:
        self.pid = pid
        self.channel = channel
        self.output_fd = output_fd
        self.reader = wire.MessageReader(channel)
        self.exited: concurrent.futures.Future = concurrent.futures.Future()
        self.isolation: dict[str, Any] = {}
        self.warmup_seconds: dict[str, float] = {}  # the child's own warm-up stages, from its "ready" message
        self.next_group_scan = 0.0  # monotonic time of the next whole-group memory scan
        self.ready = False
        self.closed = False
        channel.setblocking(False)
        os.set_blocking(output_fd, False)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.channel.close()
            os.close(self.output_fd)


class ZygoteClient:
    """Starts one zygote and talks to it; a reader thread dispatches its replies."""

    def __init__(self, config: PoolConfig, state_dir: Path, pool_id: str) -> None:
        self.config = config
        self.pool_id = pool_id
        self.lock = threading.Lock()
        self.pending_spawns: dict[int, concurrent.futures.Future] = {}
        self.children: dict[int, ChildHandle] = {}
        self.counter = 0
        self.dead = threading.Event()
        self.hello: concurrent.futures.Future = concurrent.futures.Future()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.control = ours
        cuda = config.device != "cpu"
        # An allow-list, not the service's environment: its tokens and keys never reach a judge or, through the
        # judge's memory, the runner forked from it. ``PoolConfig.env`` adds what a deployment needs on purpose.
        env = {name: os.environ[name] for name in sandbox.ENV_ALLOW_LIST if name in os.environ}
        env.update(config.env)
        env[POOL_ID_ENV] = pool_id
        # Children import lazily after chdir into their private dir: make our package (and the caller's working
        # directory, e.g. a checkout without an install) importable by absolute path.
        package_root = str(Path(__file__).resolve().parents[1])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, os.getcwd(), env.get("PYTHONPATH")) if p)
        env.setdefault("OMP_NUM_THREADS", "1")
        if cuda:
            env.pop("TRITON_INTERPRET", None)
            env["CUDA_VISIBLE_DEVICES"] = _physical_gpu(int(config.device[5:]))
        else:
            env["TRITON_INTERPRET"] = "1"  # must be set before triton is imported: the zygote imports it
            env["CUDA_VISIBLE_DEVICES"] = ""
        lock_path = timing_lock_file(Path(config.lock_dir or Path(tempfile.gettempdir()) / "kernel_reward_locks"),
                                     config.device)
        zygote_config = {
            "device": "cuda" if cuda else "cpu",
            "worker_module": config.worker_module,
            "policy": config.policy.to_dict(),
            "state_dir": str(state_dir),
            "lock_path": str(lock_path),
            "gpu_memory_fraction": (config.gpu_memory_fraction or round(0.9 / config.workers, 3)) if cuda else None,
            "seed_triton_cache": cuda,
            "exclusive_gpu_timing": config.exclusive_gpu_timing,
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "kernel_reward.zygote", "--control-fd", str(theirs.fileno()),
             "--config", json.dumps(zygote_config)],
            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        theirs.close()
        self.reader_thread = threading.Thread(target=self._read_loop, name=f"zygote-{config.device}", daemon=True)
        self.reader_thread.start()

    def wait_started(self, timeout: float) -> None:
        try:
            self.hello.result(timeout=timeout)
        except concurrent.futures.TimeoutError as exc:
            raise InfrastructureError(f"zygote for {self.config.device} did not start within {timeout:.0f} s") from exc

    def _read_loop(self) -> None:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self.control, 65536, 4)
            except OSError:
                data, fds = b"", []
            if not data:
                break
            message = json.loads(data)
            op = message.get("op")
            if op == "hello":
                self.hello.set_result(message)
            elif op == "spawned":
                child = ChildHandle(message["pid"], socket.socket(fileno=fds[0]), fds[1])
                with self.lock:
                    self.children[child.pid] = child
                    future = self.pending_spawns.pop(message["id"], None)
                if future is not None:
                    future.set_result(child)
            elif op == "exited":
                with self.lock:
                    child = self.children.pop(message["pid"], None)
                if child is not None:
                    child.exited.set_result(message.get("returncode"))
        self.dead.set()
        error = InfrastructureError(f"zygote for {self.config.device} exited (code {self.process.poll()})")
        if not self.hello.done():
            self.hello.set_exception(error)
        with self.lock:
            pending, self.pending_spawns = list(self.pending_spawns.values()), {}
            children, self.children = list(self.children.values()), {}
        for future in pending:
            future.set_exception(error)
        for child in children:
            if not child.exited.done():
                child.exited.set_result(None)

    def spawn(self, timeout: float = 30.0) -> ChildHandle:
        if self.dead.is_set():
            raise InfrastructureError(f"zygote for {self.config.device} is not running")
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self.lock:
            self.counter += 1
            self.pending_spawns[self.counter] = future
            self._send({"op": "spawn", "id": self.counter})
        try:
            return future.result(timeout=timeout)
        except concurrent.futures.TimeoutError as exc:
            raise InfrastructureError(f"zygote for {self.config.device} did not fork within {timeout} s") from exc

    def kill(self, child: ChildHandle) -> None:
        """Kill the child's process group and private uid; the zygote reaps it and reports the exit code."""
        if not self.dead.is_set() and not child.exited.done():
            with self.lock:
                self._send({"op": "kill", "pid": child.pid})
        child.close()

    def _send(self, message: dict[str, Any]) -> None:
        try:
            self.control.send(json.dumps(message).encode())
        except OSError as exc:
            raise InfrastructureError(f"zygote for {self.config.device} unreachable: {exc}") from exc

    def close(self, timeout: float = 15.0) -> None:
        """Closing the control socket makes the zygote kill its children and exit; SIGKILL it if it lingers."""
        try:
            self.control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.control.close()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            sandbox.kill_process_group(self.process.pid)
            self.process.wait()
        self.reader_thread.join(timeout=5)


def _physical_gpu(index: int) -> str:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or visible.strip() == "":
        return str(index)
    ids = [part.strip() for part in visible.split(",") if part.strip()]
    if index >= len(ids):
        raise ValueError(f"cuda:{index} is not among CUDA_VISIBLE_DEVICES={visible!r}")
    return ids[index]


# ------------------------------------------------------------------------------------------------ device pool


@dataclass
class _Outcome:
    result: EvalResult | None = None
    infra_error: str | None = None


class DevicePool:
    """Slot threads for one device, pulling ``Job`` s from ``jobs`` (a queue shared with other pools)."""

    def __init__(self, config: PoolConfig, jobs: queue.Queue, *, pool_id: str | None = None) -> None:
        self.config = config
        self.jobs = jobs
        self.pool_id = pool_id or uuid.uuid4().hex
        self.state_dir = Path(tempfile.mkdtemp(prefix=f"kernel_reward-{config.device.replace(':', '')}-"))
        os.chmod(self.state_dir, 0o711)
        self.stopping = threading.Event()
        self.zygote_lock = threading.Lock()
        self.zygote_restarts = 0
        self.spawned = 0  # children asked of the zygote so far (each serves at most one candidate)
        self.zygote = ZygoteClient(config, self.state_dir, self.pool_id)
        self.threads = [
            threading.Thread(target=self._slot_loop, name=f"slot-{config.device}-{i}", daemon=True)
            for i in range(config.workers)
        ]
        for thread in self.threads:
            thread.start()

    # -------------------------------------------------------------- children
    def _current_zygote(self) -> ZygoteClient:
        with self.zygote_lock:
            if self.zygote.dead.is_set() and not self.stopping.is_set():
                self.zygote_restarts += 1
                if self.zygote_restarts > 5:
                    raise InfrastructureError(f"zygote for {self.config.device} keeps dying; giving up")
                log.warning("zygote for %s died; starting a new one", self.config.device)
                self.zygote.close(timeout=2)
                self.zygote = ZygoteClient(self.config, self.state_dir, self.pool_id)
            return self.zygote

    def _spawn(self) -> ChildHandle | InfrastructureError:
        with self.zygote_lock:
            self.spawned += 1
        try:
            zygote = self._current_zygote()
            zygote.wait_started(self.config.warmup_timeout_s)
            return zygote.spawn()
        except InfrastructureError as exc:
            return exc

    def _discard(self, child: ChildHandle | InfrastructureError | None) -> None:
        if isinstance(child, ChildHandle):
            self.zygote.kill(child)

    # -------------------------------------------------------------- slots
    def _slot_loop(self) -> None:
        warm: collections.deque[ChildHandle | InfrastructureError] = collections.deque()
        try:
            while not self.stopping.is_set():
                while len(warm) < self.config.warm_spares and not self.stopping.is_set():
                    warm.append(self._spawn())
                try:
                    job = self.jobs.get(timeout=0.2)
                except queue.Empty:
                    continue
                if job is None:  # shutdown sentinel for one slot
                    break
                if not job.future.set_running_or_notify_cancel():
                    continue
                # Take the oldest (most likely warm) child and start warming its replacement now.
                child = warm.popleft()
                warm.append(self._spawn())
                try:
                    result = self._run_job(job, child)
                except BaseException as exc:  # noqa: BLE001 - a slot must never die with a job in hand
                    log.exception("slot failed on a job")
                    result = EvalResult.failure(Status.CRASHED, f"execution service error: {exc!r}", attempts=job.attempts)
                job.future.set_result(result)
        finally:
            for spare in warm:
                self._discard(spare)

    def _run_job(self, job: Job, first: ChildHandle | InfrastructureError | None) -> EvalResult:
        child = first
        last_error = "no attempt made"
        for attempt in range(1, self.config.max_attempts + 1):
            job.attempts = attempt
            if child is None or isinstance(child, InfrastructureError):
                last_error = str(child) if child is not None else last_error
                child = self._spawn()
                if isinstance(child, InfrastructureError):
                    last_error = str(child)
                    time.sleep(min(0.5 * attempt, 2.0))
                    continue
            outcome = self._attempt(job, child)
            child = None
            if outcome.result is not None:
                outcome.result.attempts = attempt
                return outcome.result
            last_error = outcome.infra_error or "unknown infrastructure failure"
            log.warning("infrastructure failure on %s (attempt %d/%d): %s", self.config.device, attempt,
                        self.config.max_attempts, last_error)
            if self.stopping.is_set():
                break
        return EvalResult.failure(
            Status.CRASHED,
            f"infrastructure failure: no worker could take the candidate after {job.attempts} attempt(s); "
            f"last error: {last_error}",
            attempts=job.attempts,
            scored=False,
        )

    def _attempt(self, job: Job, child: ChildHandle) -> _Outcome:
        zygote = self.zygote
        try:
            return self._drive(job, child)
        finally:
            zygote.kill(child)  # always: the child's whole process group and private uid go, whatever happened

    def _drive(self, job: Job, child: ChildHandle) -> _Outcome:
        limits = self.config.policy.limits
        warm_output = sandbox.OutputTail(limits.output_bytes)
        # 1. wait for the child to be warm (its failures are ours, not the candidate's)
        deadline = time.monotonic() + self.config.warmup_timeout_s
        while not child.ready:
            message = self._next_message(child, warm_output, deadline, job)
            if message is None:
                return _Outcome(infra_error=self._death_note(child, "during warm-up", warm_output))
            if message.get("type") == "ready":
                child.ready = True
                child.isolation = message.get("isolation") or {}
                child.warmup_seconds = {str(k): float(v) for k, v in (message.get("warmup") or {}).items()}
            elif message.get("type") == "error":
                return _Outcome(infra_error=f"warm-up failed: {str(message.get('error'))[-2000:]}")
            elif message.get("type") == "cancelled":
                return _Outcome(result=_cancelled())
        # 2. hand over the request; from "accepted" on, whatever happens is the candidate's
        wall_clock = job.request.options.timeout_s + self.config.wall_clock_grace_s
        try:
            wire.send_message(child.channel, {"type": "request", "request": job.request.to_dict()})
        except (OSError, wire.WireError) as exc:
            return _Outcome(infra_error=f"could not send the request to the worker: {exc}")
        output = sandbox.OutputTail(limits.output_bytes)
        start = time.monotonic()
        deadline = start + wall_clock
        accepted = False
        slot_wait_since: float | None = None
        slot_waited = 0.0
        remaining = wall_clock
        # The child reports its final record (rlimits set after the request) with the result; the parent adds the
        # layers it enforces itself.
        isolation = {**child.isolation, "wall_clock_s": wall_clock, "memory_watchdog_bytes": limits.memory_bytes}
        while True:
            try:
                message = self._next_message(child, output, deadline, job, watch_memory=accepted)
            except wire.WireError as exc:
                return _Outcome(result=self._failure(Status.CRASHED, f"worker sent a malformed message: {exc}", output, isolation))
            if message is None:
                if not accepted:
                    return _Outcome(infra_error=self._death_note(child, "before accepting the request", output))
                return _Outcome(result=self._failure(Status.CRASHED, self._death_note(child, "while evaluating the candidate", output), output, isolation))
            kind = message.get("type")
            if kind == "slot_wait" and accepted and slot_wait_since is None:
                # Queueing behind other candidates' timing is not this candidate's time: stop its clock (bounded,
                # since the message could be forged by the candidate).
                slot_wait_since = time.monotonic()
                remaining = deadline - slot_wait_since
                deadline = slot_wait_since + max(0.0, self.config.max_slot_wait_s - slot_waited) + remaining
            elif kind == "slot_acquired" and slot_wait_since is not None:
                now = time.monotonic()
                slot_waited += now - slot_wait_since
                deadline = now + remaining
                slot_wait_since = None
                isolation["slot_wait_s"] = round(slot_waited, 4)
            elif kind == "accepted":
                accepted = True
                isolation.update(message.get("isolation") or {})
                isolation.update(wall_clock_s=wall_clock, memory_watchdog_bytes=limits.memory_bytes)
            elif kind == "result":
                try:
                    result = EvalResult.from_dict(message["result"])
                except (KeyError, TypeError, ValueError) as exc:
                    return _Outcome(result=self._failure(Status.CRASHED, f"worker returned an invalid result: {exc}", output, isolation))
                result.isolation = {**(result.isolation or {}), **isolation}
                if output.total:
                    result.stdout_tail = output.text()
                result.phase_seconds.setdefault("service_total", round(time.monotonic() - start, 4))
                # Off the critical path (the child warmed before the request came), reported for capacity planning.
                for stage, seconds in child.warmup_seconds.items():
                    result.phase_seconds[f"warmup_{stage}"] = seconds
                return _Outcome(result=result)
            elif kind == "error":
                if not accepted:
                    return _Outcome(infra_error=f"worker failed before accepting the request: {str(message.get('error'))[-2000:]}")
                return _Outcome(result=self._failure(Status.CRASHED, f"worker failed: {message.get('error')}", output, isolation))
            elif kind == "timeout":
                return _Outcome(result=self._failure(
                    Status.TIMEOUT, f"exceeded the wall-clock limit of {wall_clock:.1f} s "
                    f"(timeout_s={job.request.options.timeout_s} + {self.config.wall_clock_grace_s} s grace); "
                    "its whole process group was killed", output, isolation))
            elif kind == "memory":
                return _Outcome(result=self._failure(
                    Status.RUNTIME_ERROR, f"host memory limit exceeded: resident set {message['rss']} bytes (with its helper processes) > "
                    f"{limits.memory_bytes} bytes; the process group was killed", output, isolation))
            elif kind == "cancelled":
                return _Outcome(result=_cancelled())

    def _next_message(self, child: ChildHandle, output: sandbox.OutputTail, deadline: float, job: Job,
                      *, watch_memory: bool = False) -> dict[str, Any] | None:
        """Next message from the child, draining its output meanwhile; synthesises timeout / memory / cancel."""
        limits = self.config.policy.limits
        output_open = True
        while True:
            message = child.reader.pop()
            if message is not None:
                return message
            if child.reader.eof:
                if output_open:  # collect the last words (e.g. a segfault trace) before reporting the death
                    sandbox.read_nonblocking(child.output_fd, output)
                return None
            now = time.monotonic()
            if now >= deadline:
                return {"type": "timeout"}
            if job.cancel.is_set() or self.stopping.is_set():
                return {"type": "cancelled"}
            if watch_memory and limits.memory_bytes is not None:
                rss = sandbox.rss_bytes(child.pid)
                if now >= child.next_group_scan:
                    # Forked helpers (the group, and every process of the child's private uid) count too.
                    child.next_group_scan = now + GROUP_SCAN_INTERVAL_S
                    # The judge leads the group; its runner (the candidate) is in it or, if it left, under its own uid.
                    runner_uid = (child.isolation.get("runner") or {}).get("uid")
                    group = sandbox.group_rss_bytes(child.pid, runner_uid if runner_uid is not None else child.isolation.get("uid"))
                    if group is not None:
                        rss = max(rss or 0, group)
                if rss is not None and rss > limits.memory_bytes:
                    return {"type": "memory", "rss": rss}
            watch = [child.channel] + ([child.output_fd] if output_open else [])
            readable, _, _ = select.select(watch, [], [], min(0.1, max(0.0, deadline - now)))
            if child.output_fd in readable:
                output_open = sandbox.read_nonblocking(child.output_fd, output)
            if child.channel in readable:
                child.reader.feed()

    def _death_note(self, child: ChildHandle, when: str, output: sandbox.OutputTail) -> str:
        self.zygote.kill(child)
        try:
            code = child.exited.result(timeout=3)
        except concurrent.futures.TimeoutError:
            code = None
        if code is None:
            how = "exited (exit status unknown)"
        elif code < 0:
            try:
                how = f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        tail = output.text().strip()[-1500:]
        return f"worker process {how} {when}" + (f"; last output:\n{tail}" if tail else "")

    @staticmethod
    def _failure(status: Status, error: str, output: sandbox.OutputTail, isolation: dict[str, Any]) -> EvalResult:
        return EvalResult.failure(status, error, stdout_tail=output.text(), isolation=isolation,
                                  feedback=f"status: {status.value}\nerror: {error[:2000]}")

    # -------------------------------------------------------------- shutdown
    def close(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=10)
        self.zygote.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)


def _cancelled() -> EvalResult:
    return EvalResult.failure(Status.CRASHED, "cancelled: the evaluation was stopped before it finished",
                              flags=["cancelled"], scored=False)


def timing_lock_file(lock_dir: Path, device: str) -> Path:
    """The per-device timing lock every service on this host shares, usable by any user (and its turnstile beside
    it, ``<path>.turnstile``: see gpu_lock).

    The folder is sticky and world-writable like /tmp (services of different users must serialise their timing
    on one GPU) and the file world-readable: ``flock`` needs only a read descriptor, so children open it
    read-only. Creating both here, in the trusted service, keeps a candidate from ever choosing their modes.
    """
    lock_dir.mkdir(parents=True, exist_ok=True)
    if lock_dir.stat().st_uid == os.geteuid():
        os.chmod(lock_dir, 0o1777)
    path = lock_dir / f"{device.replace(':', '')}.lock"
    for file in (path, path.with_name(path.name + TURNSTILE_SUFFIX)):  # the pair gpu_lock.GpuLock needs
        if not file.exists():
            file.touch(exist_ok=True)
            os.chmod(file, 0o644)  # explicit: touch's mode is filtered by the umask
    return path


def default_workers(device: str) -> int:
    """Concurrent candidates per device: all cores on the CPU (interpreter), a few per GPU (timing is exclusive)."""
    cores = len(os.sched_getaffinity(0))
    if device == "cpu":
        return max(1, cores)
    return max(2, min(8, cores // max(1, _gpu_count())))


def _gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001 - no torch / broken driver: treat as no GPU
        return 0

