"""Who may use the GPU while a judge times on it: a shared/exclusive lock across processes, writers first.

A judge's clock needs the GPU to itself: other judges' builds and checks in their own CUDA contexts time-slice the
GPU with a timed batch, and the hand-over to the runner's context then costs far more than its calibration
(docs/service.md#the-gpu-lock). Timing always excludes other timing. With ``PoolConfig.exclusive_gpu_timing`` (off
by default: docs/decisions.md):

* timing (``exclusive``) waits until no other judge is in a GPU phase, and holds the GPU alone;
* GPU phases (``shared``) run side by side, but none starts while a judge is waiting to time (no starvation: a
  judge that wants to time takes the turnstile first, and every new GPU phase must pass through it).

Both are ``flock`` locks on two files the service creates (``zygote_client.timing_lock_file``), so they work between
processes of different users and go away with a process that dies holding them.
"""

from __future__ import annotations

import contextlib
import fcntl
import time
from collections.abc import Callable, Iterator

TURNSTILE_SUFFIX = ".turnstile"

# Where a judge's seconds around the lock go (``GpuLock.seconds``; the pipeline adds them to the phase table).
EXCLUSIVE_WAIT = "lock.timing_wait"  # queueing behind other timing judges (the turnstile)
EXCLUSIVE_DRAIN = "lock.timing_drain"  # holding the turnstile while GPU phases under way finish
EXCLUSIVE_HELD = "lock.timing_held"  # the GPU alone
SHARED_WAIT = "lock.gpu_phase_wait"  # a GPU phase waiting behind a judge that times, or wants to
SHARED_HELD = "lock.gpu_phase_held"  # GPU phases (build, checks) side by side with other judges'
SHARED_LONGEST = "lock.gpu_phase_longest"  # the longest of them: what a judge that wants to time may drain
STEP_LONGEST = "lock.longest."  # + the step's name (``shared(step)``): the longest hold of that step
# Every span but the per-step ones (``STEP_LONGEST`` + a step's name).
LOCK_SPANS = (EXCLUSIVE_WAIT, EXCLUSIVE_DRAIN, EXCLUSIVE_HELD, SHARED_WAIT, SHARED_HELD, SHARED_LONGEST)


class GpuLock:
    """``exclusive()`` and ``shared()`` context managers over two open descriptors (read-only is enough for
    ``flock``). ``on_wait`` / ``on_acquired`` are told when an exclusive wait starts and ends (the service pauses
    the candidate's wall clock meanwhile). ``share_gpu_phases=False``: ``shared()`` takes no lock, so timing
    excludes only other timing (``PoolConfig.exclusive_gpu_timing`` chooses). ``seconds``: how long this lock's
    holder waited for and held each side (``LOCK_SPANS``), so the phase table can tell queueing from work."""

    def __init__(
        self,
        lock_fd: int,
        turnstile_fd: int,
        on_wait: Callable[[], None] = lambda: None,
        on_acquired: Callable[[], None] = lambda: None,
        share_gpu_phases: bool = True,
    ) -> None:
        self.lock_fd = lock_fd
        self.turnstile_fd = turnstile_fd
        self.on_wait = on_wait
        self.on_acquired = on_acquired
        self.share_gpu_phases = share_gpu_phases
        self.seconds: dict[str, float] = {}

    def _add(self, span: str, since: float) -> float:
        now = time.perf_counter()
        self.seconds[span] = self.seconds.get(span, 0.0) + now - since
        return now

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        self.on_wait()
        waiting = time.perf_counter()
        if (
            not self.share_gpu_phases
        ):  # nothing takes the shared side: the plain exclusive lock is all there is
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
            held = self._add(EXCLUSIVE_WAIT, waiting)
            self.on_acquired()
            try:
                yield
            finally:
                fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
                self._add(EXCLUSIVE_HELD, held)
            return
        fcntl.flock(self.turnstile_fd, fcntl.LOCK_EX)  # from here on no new GPU phase starts
        try:
            turnstile = self._add(EXCLUSIVE_WAIT, waiting)
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX)  # the ones under way finish
            held = self._add(EXCLUSIVE_DRAIN, turnstile)
            self.on_acquired()
            try:
                yield
            finally:
                fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
                self._add(EXCLUSIVE_HELD, held)
        finally:
            fcntl.flock(self.turnstile_fd, fcntl.LOCK_UN)

    def shared(self, step: str = "other") -> contextlib.AbstractContextManager[None]:
        """The shared side for one device step; ``step`` names it in ``seconds`` (its longest hold)."""
        return self._shared(step) if self.share_gpu_phases else contextlib.nullcontext()

    @contextlib.contextmanager
    def _shared(self, step: str) -> Iterator[None]:
        waiting = time.perf_counter()
        fcntl.flock(self.turnstile_fd, fcntl.LOCK_EX)  # wait behind any judge that wants to time
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.turnstile_fd, fcntl.LOCK_UN)
        held = self._add(SHARED_WAIT, waiting)
        try:
            yield
        finally:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
            now = self._add(SHARED_HELD, held)
            for span in (SHARED_LONGEST, STEP_LONGEST + step):
                self.seconds[span] = max(self.seconds.get(span, 0.0), now - held)

    # The worker's ``timing_slot`` protocol: calling the slot enters exclusive timing.
    def __call__(self) -> contextlib.AbstractContextManager[None]:
        return self.exclusive()
