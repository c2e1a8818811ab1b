"""Is a measured per-call time physically possible? The memory roofline of one call, and the judge's check of it.

One call must read its inputs from device memory and write its outputs back. The judge flushes the L2 cache before
every timed batch and copies fresh inputs in after its start event (``batch_clock``), so every call reads its
inputs from DRAM, and across a batch of K calls at least ``K * output - L2`` bytes are written back inside the
window. The lower bound of one call is therefore

    floor_ms = (input_bytes + max(0, output_bytes - l2_bytes / K)) / bandwidth

with the bandwidth measured once per process by a device-to-device copy (``device_bandwidth_gbps``, about 90 %
of a GPU's peak). A time under ``MARGIN`` of the floor is ``below_roofline``: the measurement, not the kernel, is
wrong (a fixed cost over-subtracted, an input never read), so the judge re-times it and, if it stays below, flags
it and clamps the speedup to ``max_speedup``. A task whose reference itself runs under the floor does not read all of its
inputs: the bound does not apply to it (``applies`` is False). See docs/timing.md#flags-and-guards.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch

from kernel_reward.timing import batch_stats
from kernel_reward.timing.batch_stats import BatchTiming

MARGIN = 0.75  # a time under this share of the floor is below it (kernels that only read can beat a copy)
COPY_BYTES = 256 * 1024 * 1024  # the bandwidth probe's buffer: several times any L2 cache
COPY_REPEATS = 10


@dataclass(frozen=True)
class Roofline:
    """One call's memory floor beside the measured medians (ms)."""

    bytes_per_call: int
    bandwidth_gbps: float
    floor_ms: float
    reference_ms: float
    candidate_ms: float
    margin: float = MARGIN

    @property
    def applies(self) -> bool:
        """The reference respects the floor: the task reads what its inputs hold."""
        return self.floor_ms > 0 and self.reference_ms >= self.margin * self.floor_ms

    @property
    def below(self) -> bool:
        """The candidate's median is under ``margin`` of the floor, on a task the floor applies to."""
        return self.applies and self.candidate_ms < self.margin * self.floor_ms

    @property
    def max_speedup(self) -> float:
        """The largest speedup the floor allows (with the margin): reference time / (margin * floor)."""
        return self.reference_ms / (self.margin * self.floor_ms) if self.floor_ms > 0 else math.inf

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "applies": self.applies, "below": self.below}


def bytes_per_call(input_bytes: int, output_bytes: int, l2_bytes: int, calls_per_batch: int) -> int:
    """Pure: the bytes one call must move to or from DRAM (module docstring)."""
    if min(input_bytes, output_bytes, l2_bytes) < 0 or calls_per_batch < 1:
        raise ValueError(
            f"need sizes >= 0 and calls >= 1, got {input_bytes}, {output_bytes}, {l2_bytes}, "
            f"{calls_per_batch}"
        )
    return input_bytes + max(0, output_bytes - l2_bytes // calls_per_batch)


def check(
    moved_bytes: int, bandwidth_gbps: float, reference_ms: float, candidate_ms: float, margin: float = MARGIN
) -> Roofline:
    """Pure: the floor of ``moved_bytes`` at ``bandwidth_gbps`` (GB/s = 1e9 bytes/s) beside both medians."""
    if not bandwidth_gbps > 0:
        raise ValueError(f"bandwidth must be > 0 GB/s, got {bandwidth_gbps!r}")
    floor_ms = moved_bytes / (bandwidth_gbps * 1e9) * 1e3
    return Roofline(moved_bytes, bandwidth_gbps, floor_ms, reference_ms, candidate_ms, margin)


_bandwidth_gbps: dict[int, float] = {}


def device_bandwidth_gbps(device: torch.device) -> float:
    """The device's memory bandwidth by a device-to-device copy (read + write), best of ``COPY_REPEATS``; measured
    once per process and device. Call it where nothing else runs on the GPU (the judge: inside the timing slot)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _bandwidth_gbps:
        with torch.cuda.device(index):
            source = torch.empty(COPY_BYTES // 4, dtype=torch.float32, device=device)
            target = torch.empty_like(source)
            target.copy_(source)
            best_ms = math.inf
            for _ in range(COPY_REPEATS):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                target.copy_(source)
                end.record()
                end.synchronize()
                best_ms = min(best_ms, start.elapsed_time(end))
            del source, target
            torch.cuda.empty_cache()  # the probe's 512 MiB must not stay reserved in a worker
        _bandwidth_gbps[index] = 2 * COPY_BYTES / (best_ms * 1e-3) / 1e9
    return _bandwidth_gbps[index]


def review(
    timing: BatchTiming,
    moved_bytes: int,
    bandwidth_gbps: float,
    retime: Callable[[], BatchTiming] | None,
    flags: list[str],
) -> tuple[BatchTiming, Roofline]:
    """The judge's check of one measurement (a ``batch_stats.BatchTiming``): below the roofline, re-time once
    (``retime()``, flag ``below_roofline_remeasured``; ``retime`` None: it was already re-measured, as an
    implausible speedup); still below, flag ``below_roofline`` and, when the fixed-cost subtraction is what broke
    (``batch_stats.calibration_artefact``), fall back to the unsubtracted times."""

    def roof_of(measured: BatchTiming) -> Roofline:
        return check(moved_bytes, bandwidth_gbps, measured.reference.median_ms, measured.candidate.median_ms)

    roof = roof_of(timing)
    if not roof.below:
        return timing, roof
    if retime is not None:
        flags.append("below_roofline_remeasured")
        timing = retime()
        roof = roof_of(timing)
    if roof.below:
        flags.append("below_roofline")
        if batch_stats.calibration_artefact(timing) and "timing_unsubtracted" not in timing.flags:
            timing = batch_stats.unsubtracted(timing)
            roof = roof_of(timing)
    return timing, roof


def clamp_speedup(
    speedup: float, interval: tuple[float, float], roof: Roofline
) -> tuple[float, tuple[float, float], bool]:
    """Pure: a speedup (and its interval) of a time still below the roofline, clamped to ``roof.max_speedup``;
    whether it was clamped. Times the floor allows pass unchanged."""
    if not roof.below or speedup <= roof.max_speedup:
        return speedup, interval, False
    cap = roof.max_speedup
    return cap, (min(interval[0], cap), min(interval[1], cap)), True
