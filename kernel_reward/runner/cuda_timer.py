"""A CUDA-event bracket around one call in the current process, with a calibrated GPU spin queued ahead so
the host's launch latency is not timed (the runner's coverage pass uses it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


@dataclass(frozen=True)
class CallTime:
    """One timed call: event (current-stream) time, and host-bracket time beyond it (side-stream detector)."""

    device_ms: float
    excess_ms: float
    launch_ms: float = 0.0  # host time spent launching the call (start event to end event, host side)

    @property
    def bracket_ms(self) -> float:
        return self.device_ms + max(self.excess_ms, 0.0)


def spin_cycles_per_ms(device: torch.device) -> float:
    """GPU clock cycles ``torch.cuda._sleep`` spins per millisecond on ``device`` (measured with events)."""
    cycles = 1_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(cycles)  # the first call loads the kernel
    start.record()
    torch.cuda._sleep(cycles)
    end.record()
    torch.cuda.synchronize(device)
    return cycles / max(start.elapsed_time(end), 1e-3)


def lead_spin_cycles(cycles_per_ms: float, launch_ms: float, cap_ms: float = 50.0) -> int:
    """Pure: a spin that outlasts a host launch of ``launch_ms`` with margin (2x + 50 us), capped at ``cap_ms``."""
    return int(cycles_per_ms * min(2.0 * launch_ms + 0.05, cap_ms))


class CudaTimer:
    """Flushed, synchronised, event + host-bracket timing of one call on a CUDA device (see module docstring)."""

    def __init__(self, device: torch.device, l2_flush_mb: int) -> None:
        self.device = device
        self.flush_buffer = (
            torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.float32, device=device)
            if l2_flush_mb
            else None
        )
        self.host_overhead_ms = 0.0
        self.spin_cycles = 0  # GPU spin queued after the flush so that the launch of the call is hidden
        self._cycles_per_ms: float | None = None

    def _bracket(self, fn: Callable[[], Any]) -> tuple[float, float, float, Any]:
        """(event ms, host-bracket ms, host launch ms, output) of one flushed call."""
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(self.device)
        host_start = time.perf_counter()
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()  # queued: the GPU flushes L2 while the host goes on
        if self.spin_cycles:
            torch.cuda._sleep(
                self.spin_cycles
            )  # ... and spins until the call's first kernel is surely queued
        launch_start = time.perf_counter()
        start.record()
        output = fn()
        end.record()
        launch_ms = (time.perf_counter() - launch_start) * 1e3
        torch.cuda.synchronize(self.device)
        host_ms = (time.perf_counter() - host_start) * 1e3
        return start.elapsed_time(end), host_ms, launch_ms, output

    def measure(self, fn: Callable[[], Any]) -> tuple[CallTime, Any]:
        event_ms, host_ms, launch_ms, output = self._bracket(fn)
        return CallTime(event_ms, host_ms - event_ms - self.host_overhead_ms, launch_ms), output

    def cover_launches(self, launch_ms: float) -> None:
        """Spin long enough that the GPU is still busy when the host has launched a call taking ``launch_ms``."""
        if self._cycles_per_ms is None:
            self._cycles_per_ms = spin_cycles_per_ms(self.device)
        self.spin_cycles = lead_spin_cycles(self._cycles_per_ms, launch_ms)

    @property
    def spin_ms(self) -> float:
        """Device time of the lead spin queued before each call (0 before ``cover_launches``)."""
        return self.spin_cycles / self._cycles_per_ms if self._cycles_per_ms else 0.0

    def calibrate(self, repeats: int = 30) -> None:
        """Host-bracket time beyond the event time around an empty call (median): flush, spin and sync costs."""
        samples = []
        for _ in range(repeats):
            event_ms, host_ms, _, _ = self._bracket(lambda: None)
            samples.append(host_ms - event_ms)
        self.host_overhead_ms = float(np.median(samples))

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)
