"""GPU-side gates: order work across streams and processes with 32-bit words in memory (CUDA stream memory ops).

The judge's clock on the GPU (``judge_timing``) brackets a runner's calls with the judge's OWN CUDA events. The
runner's stream cannot be ordered by an event of the judge's (events do not cross contexts with timing on), so
the two streams meet at words in the shared arena instead:

    runner stream:  wait(flag >= n) -> the calls -> write(done = n)
    judge stream:   wait(host gate >= n) -> E0 -> inputs in -> write(flag = n) -> wait(done >= n) -> outputs out -> E1

``HostGate`` is a word in pinned host memory the judge's host opens once everything is queued, so neither side's
launch latency falls between E0 and E1. A watchdog opens it anyway after ``open_after_s``: code that synchronises
the host while it is being queued (``.item()``, a data-dependent shape) would otherwise wait for a gate that its
own thread has to open.

The V2 entry points of the driver API (``cuStreamWaitValue32_v2`` ...) are available on every platform since
CUDA 11.7; older drivers make ``available()`` false and the judge falls back to its host clock.
"""

from __future__ import annotations

import ctypes
import functools
import threading
import time

import torch

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
    _check(_driver().wait(_stream_handle(stream), address, value & 0xFFFFFFFF, WAIT_GEQ), "cuStreamWaitValue32")


def write_value(address: int, value: int, stream: torch.cuda.Stream | None = None) -> None:
    """Queue on ``stream``: write ``value`` to the word at ``address`` once everything before it has finished (the
    default memory barrier makes those earlier writes visible first)."""
    _check(_driver().write(_stream_handle(stream), address, value & 0xFFFFFFFF, 0), "cuStreamWriteValue32")


class HostGate:
    """A word in pinned host memory that the GPU waits on and the host opens (see the module docstring). Its 4 KB
    page is never freed: a queued wait may still read it, and judges are one process per evaluation."""

    def __init__(self, open_after_s: float) -> None:
        self.open_after_s = open_after_s
        torch.cuda.init()  # the primary context must be current for the driver calls below
        torch.cuda.current_stream().synchronize()
        host = ctypes.c_void_p()
        _check(_driver().host_alloc(ctypes.byref(host), 4096, HOST_ALLOC_PORTABLE | HOST_ALLOC_DEVICEMAP), "cuMemHostAlloc")
        self.word = ctypes.c_int32.from_address(host.value)
        self.word.value = 0
        pointer = ctypes.c_uint64()
        _check(_driver().host_pointer(ctypes.byref(pointer), host.value, 0), "cuMemHostGetDevicePointer")
        self.address = pointer.value
        self.count = 0
        self._lock = threading.Lock()
        self._watchdog: threading.Timer | None = None
        self.opened_by_watchdog = 0  # how many gates the watchdog had to open (code that syncs while queued)

    def close_next(self, stream: torch.cuda.Stream | None = None) -> int:
        """Queue a wait for the next gate on ``stream`` and start its watchdog; returns the gate's number."""
        self.count += 1
        number = self.count
        wait_value(self.address, number, stream)
        self._watchdog = threading.Timer(self.open_after_s, self._open_late, (number,))
        self._watchdog.daemon = True
        self._watchdog.start()
        return number

    def open(self, number: int) -> None:
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        self._set(number)

    def _open_late(self, number: int) -> None:
        if self._set(number):
            self.opened_by_watchdog += 1

    def _set(self, number: int) -> bool:
        with self._lock:
            if self.word.value >= number:
                return False
            self.word.value = number
            return True


def wait_for_event(event: torch.cuda.Event, deadline: float, what: str) -> None:
    """Poll ``event`` until it has happened; TimeoutError at ``deadline`` (time.monotonic()). Polling, not
    ``event.synchronize()``: a runner that never writes its word would otherwise hang the judge for good."""
    pause = 20e-6
    while not event.query():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(pause)
        pause = min(pause * 2, 200e-6)
