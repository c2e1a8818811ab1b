"""Warm per-device process pools: scheduling, wall clock, kills and bounded infrastructure retries.

One ``DevicePool`` per device (each GPU, or the CPU in interpreter mode) owns a zygote process (``service.zygote``)
and ``workers`` slot threads. Every slot keeps one child warming in the background while it runs a candidate on
another, so process start-up, imports, CUDA context creation and the worker's self-check stay off the critical
path. Each child serves exactly one candidate and is then killed with its whole process group (and every process
of its private uid).

Outcomes of one attempt: a child that died or failed before it accepted the request is an infrastructure failure,
retried on a fresh child (``max_attempts`` in all, counted in ``EvalResult.attempts``); one that died after is
``crashed``; one past its wall clock is ``timeout``, over its memory limit ``runtime_error``; one out of device
memory under its worker's share runs once more ALONE (``DeviceShare``). Details: docs/service.md#the-pool.

All slot threads of all pools pull from one shared queue, so GPUs balance themselves. The zygote's handle is
``zygote_client``; one attempt's conversation with a child (its events and wall clock) is ``child_session``.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import logging
import os
import queue
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult, Status
from kernel_reward.service.child_session import ChildSession, Outcome
from kernel_reward.service.config import PoolConfig
from kernel_reward.service.gpu_lock import TURNSTILE_SUFFIX, GpuLock
from kernel_reward.service.timing_priors import PriorStore
from kernel_reward.service.zygote_client import (
    ChildHandle,
    InfrastructureError,
    ZygoteClient,
    device_lock_file,
)

log = logging.getLogger(__name__)


@dataclass
class Job:
    """One request on its way through the pool."""

    request: EvalRequest
    future: concurrent.futures.Future = field(default_factory=concurrent.futures.Future)
    cancel: threading.Event = field(default_factory=threading.Event)
    attempts: int = 0


# ------------------------------------------------------------------------------------------------ device share


class DeviceShare:
    """Evaluations share a device (``shared``) unless one needs it alone (``alone``): that one waits for the running
    evaluations to end and, from the moment it waits, no new one starts (it cannot starve). The same writers-first
    ``gpu_lock.GpuLock`` the judges time under, over its own pair of files (``zygote_client.device_lock_file``), so
    every service on this host that uses the same ``lock_dir`` keeps out of a device's evaluation run alone. Each
    acquisition opens its own descriptors: ``flock`` excludes open files, so the pool's threads exclude each other."""

    def __init__(self, lock_path: Path) -> None:
        self.lock_path = lock_path

    @contextlib.contextmanager
    def _lock(self) -> Iterator[GpuLock]:
        fds = [
            os.open(self.lock_path, os.O_RDONLY),
            os.open(f"{self.lock_path}{TURNSTILE_SUFFIX}", os.O_RDONLY),
        ]
        try:
            yield GpuLock(*fds)
        finally:
            for fd in fds:
                os.close(fd)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._lock() as lock, lock.shared():
            yield

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        with self._lock() as lock, lock.exclusive():
            yield


ALONE_WORTH_TRYING = (
    4  # the judge holds ~3.5x one call's inputs + outputs while it times (batch_clock.BatchClock)
)


def needs_device_alone(result: EvalResult) -> bool:
    """Pure: the evaluation ran out of device memory under its worker's share (pipeline.mark_out_of_memory), on a
    task large enough for the evaluator's own footprint to be the cause: ``ALONE_WORTH_TRYING`` times one call's
    inputs + outputs above the share (``EvalResult.memory``). A small task that runs out of memory is the
    candidate's doing (a size computed wrong): running it alone would stall the device for nothing. Unknown sizes
    (it failed before the reference was built) are given the retry."""
    if "out_of_memory" not in result.flags:
        return False
    call, share = result.memory.get("call_bytes"), result.memory.get("share_bytes")
    if call is None or share is None:
        return True
    return ALONE_WORTH_TRYING * call > share


# ------------------------------------------------------------------------------------------------ device pool


class DevicePool:
    """Slot threads for one device, pulling ``Job`` s from ``jobs`` (a queue shared with other pools)."""

    def __init__(self, config: PoolConfig, jobs: queue.Queue, *, pool_id: str | None = None) -> None:
        self.config = config
        self.jobs = jobs
        self.pool_id = pool_id or uuid.uuid4().hex
        self.state_dir = Path(tempfile.mkdtemp(prefix=f"kernel_reward-{config.device.replace(':', '')}-"))
        os.chmod(self.state_dir, 0o711)
        self.stopping = threading.Event()
        self.share = DeviceShare(device_lock_file(config, "share"))
        self.priors = PriorStore(config.timing_prior_max_age_s, config.timing_prior_max_uses)
        self.zygote_lock = threading.Lock()
        self.zygote_restarts = 0
        self.spawned = 0  # children asked of the zygote so far (each serves at most one candidate)
        self.completed = 0  # jobs this pool answered (the shared queue spreads them over the device pools)
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
                self.zygote.close(timeout_s=2)
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
                    result = EvalResult.failure(
                        Status.CRASHED, f"execution service error: {exc!r}", attempts=job.attempts
                    )
                with self.zygote_lock:
                    self.completed += 1
                job.future.set_result(result)
        finally:
            for spare in warm:
                self._discard(spare)

    def _run_job(self, job: Job, first: ChildHandle | InfrastructureError | None) -> EvalResult:
        """Run ``job`` on shared terms; once more alone when it ran out of device memory (module docstring)."""
        result = self._run_attempts(job, first)
        if (
            not needs_device_alone(result)
            or job.request.alone
            or self.config.workers == 1
            or self.stopping.is_set()
        ):
            return result  # with one worker it already had the device's whole share
        log.info("out of memory under a worker's share on %s: running it again alone", self.config.device)
        job.request = replace(job.request, alone=True)
        retried = self._run_attempts(job, None)
        retried.flags.append("retried_alone_after_out_of_memory")
        return retried

    def _run_attempts(self, job: Job, first: ChildHandle | InfrastructureError | None) -> EvalResult:
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
            log.warning(
                "infrastructure failure on %s (attempt %d/%d): %s",
                self.config.device,
                attempt,
                self.config.max_attempts,
                last_error,
            )
            if self.stopping.is_set():
                break
        return EvalResult.failure(
            Status.CRASHED,
            f"infrastructure failure: no worker could take the candidate after {job.attempts} attempt(s); "
            f"last error: {last_error}",
            attempts=job.attempts,
            scored=False,
        )

    def _attempt(self, job: Job, child: ChildHandle) -> Outcome:
        zygote = self.zygote
        try:
            with self.share.alone() if job.request.alone else self.share.shared():
                return ChildSession(self.config, zygote, child, job, self.stopping, self.priors).run()
        finally:
            zygote.kill(
                child
            )  # always: the child's whole process group and private uid go, whatever happened

    # -------------------------------------------------------------- shutdown
    def close(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=10)
        self.zygote.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)
