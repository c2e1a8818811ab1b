"""GPU-side gates: order work across streams and processes with 32-bit words in memory (CUDA stream memory ops).

The judge's clock on the GPU (``timing.batch_clock``) brackets a runner's calls with the judge's OWN CUDA events.
An event of the judge's cannot order the runner's stream (events do not cross contexts with timing on), so the two
streams meet at two words of a host page both processes map (``SharedWords``):

    runner stream:  wait(flag >= n) -> the calls -> write(done = n)
    judge stream:   wait(host gate >= n) -> E0 -> inputs in -> write(flag = n) -> wait(done >= n) -> seal -> E1

``HostGate`` is a word in pinned host memory the judge's host opens once everything is queued, so neither side's
launch latency falls between E0 and E1. A watchdog opens it anyway after ``open_after_s``: code that synchronises
the host while it is being queued (``.item()``, a data-dependent shape) would otherwise wait for a gate that its
own thread has to open. The V2 driver entry points (``cuStreamWaitValue32_v2`` ...) exist since CUDA 11.7; older
drivers make ``available()`` false and the judge falls back to its host clock. See docs/timing.md#the-batch-clock.
"""

from __future__ import annotations

import ctypes
import fcntl
import functools
import mmap
import os
import threading
import time
from collections.abc import Callable

import torch

OPEN_AFTER_S = 0.02  # the watchdog opens a gate the host could not open (code that syncs while queued)
WAIT_GEQ = 0  # CU_STREAM_WAIT_VALUE_GEQ: (int32)(*addr - value) >= 0, a cyclic compare
HOST_ALLOC_PORTABLE, HOST_ALLOC_DEVICEMAP = 0x01, 0x02  # CU_MEMHOSTALLOC_*: pinned, mapped into the device


class GateError(RuntimeError):
    """A driver call for a gate failed."""


class _Driver:
    def __init__(self) -> None:
        lib = ctypes.CDLL("libcuda.so.1")
        self.wait = lib.cuStreamWaitValue32_v2
        self.wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        self.write = lib.cuStreamWriteValue32_v2
        self.write.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
        self.host_pointer = lib.cuMemHostGetDevicePointer_v2
        self.host_pointer.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p, ctypes.c_uint]
        self.host_alloc = lib.cuMemHostAlloc
        self.host_alloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_uint]
        self.host_register = lib.cuMemHostRegister_v2
        self.host_register.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
        self.host_unregister = lib.cuMemHostUnregister
        self.host_unregister.argtypes = [ctypes.c_void_p]


@functools.cache
def _driver() -> _Driver:
    return _Driver()


def available(device: torch.device) -> bool:
    """Whether this process can use gates on ``device`` (a CUDA device whose driver has the V2 memory ops)."""
    if device.type != "cuda":
        return False
    try:
        _driver()
    except (OSError, AttributeError):
        return False
    return True


def _check(code: int, what: str) -> None:
    if code != 0:
        raise GateError(f"CUDA driver call {what} failed with error {code}")


def _stream_handle(stream: torch.cuda.Stream | None) -> ctypes.c_void_p:
    return ctypes.c_void_p((stream or torch.cuda.current_stream()).cuda_stream)


def wait_value(address: int, value: int, stream: torch.cuda.Stream | None = None) -> None:
    """Queue on ``stream``: nothing after this runs until the word at ``address`` is >= ``value`` (cyclically)."""
    _check(
        _driver().wait(_stream_handle(stream), address, value & 0xFFFFFFFF, WAIT_GEQ), "cuStreamWaitValue32"
    )


def write_value(address: int, value: int, stream: torch.cuda.Stream | None = None) -> None:
    """Queue on ``stream``: write ``value`` to the word at ``address`` once everything before it has finished (the
    default memory barrier makes those earlier writes visible first)."""
    _check(_driver().write(_stream_handle(stream), address, value & 0xFFFFFFFF, 0), "cuStreamWriteValue32")


def handover_kernel(scratch: torch.Tensor) -> None:
    """The one tiny kernel a dry (calibration) batch runs in the runner: handing the GPU to a context costs ~0.3 ms
    on an H200 when it has a kernel to run and next to nothing when it only passes the words on, so the
    calibration must run one. Its own cost is not the hand-over's: the judge times this same kernel in its own
    process and takes it out (``calibration``), else each batch's subtraction would hold an extra kernel (on an
    H100 a one-call 0.09 ms task reads 1.02-1.06x against itself with ``torch.ones(1).add_(1)``, two kernels)."""
    scratch.add_(1)


class HostGate:
    """A word in pinned host memory that the GPU waits on and the host opens (see the module docstring). Its 4 KB
    page is never freed: a queued wait may still read it, and judges are one process per evaluation."""

    def __init__(self, open_after_s: float) -> None:
        self.open_after_s = open_after_s
        torch.cuda.init()  # the primary context must be current for the driver calls below
        torch.cuda.current_stream().synchronize()
        host = ctypes.c_void_p()
        _check(
            _driver().host_alloc(ctypes.byref(host), 4096, HOST_ALLOC_PORTABLE | HOST_ALLOC_DEVICEMAP),
            "cuMemHostAlloc",
        )
        self.word = ctypes.c_int32.from_address(host.value)
        self.word.value = 0
        pointer = ctypes.c_uint64()
        _check(_driver().host_pointer(ctypes.byref(pointer), host.value, 0), "cuMemHostGetDevicePointer")
        self.address = pointer.value
        self.count = 0
        self._lock = threading.Lock()
        self.watchdog = Watchdog(self._open_late)

    @property
    def opened_by_watchdog(self) -> int:
        """How many gates the watchdog had to open (code that synchronised while its work was being queued)."""
        return self.watchdog.fired

    def close_next(self, stream: torch.cuda.Stream | None = None) -> int:
        """Queue a wait for the next gate on ``stream`` and arm the watchdog; returns the gate's number."""
        self.count += 1
        number = self.count
        wait_value(self.address, number, stream)
        self.watchdog.arm(number, self.open_after_s)
        return number

    def open(self, number: int) -> None:
        self.watchdog.disarm(number)
        self._set(number)

    def _open_late(self, number: int) -> bool:
        return self._set(number)

    def _set(self, number: int) -> bool:
        with self._lock:
            if self.word.value >= number:
                return False
            self.word.value = number
            return True


class SharedWords:
    """The two words a timed batch's streams meet at, ``flag`` (offset 0) and ``done`` (offset 4), in a page of host
    memory that the judge and its runner both map (a sealed memfd whose descriptor crosses by SCM_RIGHTS), pinned
    and mapped into the device in each process, so each one's streams can wait on and write them.

    In host memory rather than in the GPU arena so the judge's HOST can write ``done`` itself: when a runner dies
    or never answers, the judge's stream, queued to wait for ``done``, is released without a second stream. That
    lets the judge run with a single hardware queue (``CUDA_DEVICE_MAX_CONNECTIONS=1``, whose context creation is
    4x faster in a busy pool), where a rescue stream would queue behind the very wait it should release. A runner
    can write the words from its host too; that is no more than its streams could always do (an early ``done``
    only hands the judge unfinished outputs, which fail verification).
    """

    SIZE = 4096
    FLAG, DONE = 0, 4

    def __init__(self, fd: int | None = None) -> None:
        """Create the page (``fd`` None: the judge) or map the judge's (the runner; ``fd`` is then owned here)."""
        if fd is None:
            fd = os.memfd_create("kernel_reward_signals", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, self.SIZE)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        self.fd: int | None = fd
        self._mapping = mmap.mmap(fd, self.SIZE)
        self._words = (ctypes.c_uint32 * (self.SIZE // 4)).from_buffer(self._mapping)
        self._host = ctypes.addressof(self._words)
        torch.cuda.init()  # the primary context must be current for the driver calls below
        torch.cuda.current_stream().synchronize()
        _check(
            _driver().host_register(self._host, self.SIZE, HOST_ALLOC_PORTABLE | HOST_ALLOC_DEVICEMAP),
            "cuMemHostRegister",
        )
        pointer = ctypes.c_uint64()
        _check(_driver().host_pointer(ctypes.byref(pointer), self._host, 0), "cuMemHostGetDevicePointer")
        self._device = pointer.value

    def address(self, offset: object) -> int:
        """Device address of the word at ``offset`` (FLAG or DONE; anything else is a protocol error)."""
        if offset not in (self.FLAG, self.DONE) or isinstance(offset, bool):
            raise ValueError(f"bad signal word offset {offset!r}")
        return self._device + int(offset)  # type: ignore[call-overload]

    def write_from_host(self, offset: int, value: int) -> None:
        self._words[offset // 4] = value & 0xFFFFFFFF

    def close(self) -> None:
        """Unregister and unmap. Only once no queued wait or write can still touch the page."""
        if self._words is None:
            return
        _driver().host_unregister(self._host)
        self._words = None
        self._mapping.close()
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Watchdog:
    """Calls ``fire(number)`` once ``after_s`` have passed since ``arm(number, after_s)``, unless disarmed first.

    One thread for the watchdog's life: a ``threading.Timer`` per batch costs the judge about a millisecond a batch
    on an H200, mostly in GIL hand-overs while the judge polls for its events. ``fired`` counts the calls of
    ``fire`` that returned True.
    """

    def __init__(self, fire: Callable[[int], bool]) -> None:
        self.fire = fire
        self.fired = 0
        self._changed = threading.Condition()
        self._armed: tuple[int, float] | None = None  # (number, monotonic time to fire at)
        threading.Thread(target=self._run, name="gate-watchdog", daemon=True).start()

    def arm(self, number: int, after_s: float) -> None:
        with self._changed:
            self._armed = (number, time.monotonic() + after_s)
            self._changed.notify()

    def disarm(self, number: int) -> None:
        """Stand down for ``number`` and anything armed before it."""
        with self._changed:
            if self._armed is not None and self._armed[0] <= number:
                self._armed = None

    def _run(self) -> None:
        with self._changed:
            while True:
                if self._armed is None:
                    self._changed.wait()
                    continue
                number, due = self._armed
                remaining = due - time.monotonic()
                if remaining > 0:
                    self._changed.wait(remaining)
                    continue
                self._armed = None
                if self.fire(number):
                    self.fired += 1


def wait_for_event(event: torch.cuda.Event, deadline: float, what: str) -> None:
    """Poll ``event`` until it has happened; TimeoutError at ``deadline`` (time.monotonic()). Polling, not
    ``event.synchronize()``: a runner that never writes its word would otherwise hang the judge for good."""
    pause = 20e-6
    while not event.query():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(pause)
        pause = min(pause * 2, 200e-6)
