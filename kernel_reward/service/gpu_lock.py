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
from collections.abc import Callable, Iterator

TURNSTILE_SUFFIX = ".turnstile"


class GpuLock:
    """``exclusive()`` and ``shared()`` context managers over two open descriptors (read-only is enough for
    ``flock``). ``on_wait`` / ``on_acquired`` are told when an exclusive wait starts and ends (the service pauses
    the candidate's wall clock meanwhile). ``share_gpu_phases=False``: ``shared()`` takes no lock, so timing
    excludes only other timing (``PoolConfig.exclusive_gpu_timing`` chooses)."""

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

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        self.on_wait()
        if (
            not self.share_gpu_phases
        ):  # nothing takes the shared side: the plain exclusive lock is all there is
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
            self.on_acquired()
            try:
                yield
            finally:
                fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
            return
        fcntl.flock(self.turnstile_fd, fcntl.LOCK_EX)  # from here on no new GPU phase starts
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX)  # the ones under way finish
            self.on_acquired()
            try:
                yield
            finally:
                fcntl.flock(self.lock_fd, fcntl.LOCK_UN)
        finally:
            fcntl.flock(self.turnstile_fd, fcntl.LOCK_UN)

    def shared(self) -> contextlib.AbstractContextManager[None]:
        return self._shared() if self.share_gpu_phases else contextlib.nullcontext()

    @contextlib.contextmanager
    def _shared(self) -> Iterator[None]:
        fcntl.flock(self.turnstile_fd, fcntl.LOCK_EX)  # wait behind any judge that wants to time
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_SH)
        finally:
            fcntl.flock(self.turnstile_fd, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)

    # The worker's ``timing_slot`` protocol: calling the slot enters exclusive timing.
    def __call__(self) -> contextlib.AbstractContextManager[None]:
        return self.exclusive()
