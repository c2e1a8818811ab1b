"""Paired GPU timing of reference and candidate in one process (issue 3, step 5; background §7).

Method (one timed call of either side):
  * fresh input buffers cloned from a pool of pre-generated inputs, two neighbouring values swapped per call
    (``timing_args``: pointer- and value-keyed caches cannot replay),
  * ``torch.cuda.synchronize()`` (device-wide, every stream) and the host clock; then the L2 flush (zeroing a
    buffer larger than L2) is QUEUED, followed by the start event, the call and the end event; then
    ``torch.cuda.synchronize()`` again and the host clock.
  Queueing the flush first, then a calibrated GPU spin (``torch.cuda._sleep``) long enough to cover the host's
  launch of the call, keeps the GPU busy until the call's first kernel is queued: the start event fires just
  before it, so the event time is the call's device time, not the host's launch latency. (Synchronising between
  flush and start, as an earlier version did, made a ~15 us kernel read 50-100 us of launch latency that drifted
  with host state: 3.35 % CV across runs, and bimodal readings once a 256 MB flush alone no longer covered it.)
  Two readings per call (``CallTime``): ``device_ms`` from the events, and ``excess_ms`` = host bracket - event
  time - the same excess measured around an empty call. Events see only the current stream; the device-wide
  sync sees every stream, so work hidden on a side stream shows up as excess (a 190 us GEMM on a side stream
  read 1.4 us by events). ``select_samples`` uses the events unless the candidate's excess exceeds the
  reference's beyond noise; then both sides are timed by the host bracket and the result is flagged.
Reference and candidate calls alternate (ref, cand, ref, cand, ...) so drift and competing load hit both
equally. The number of calls is derived from a quick estimate and ``timing_budget_ms``. The summary statistic is
the MEDIAN; speedup = median_ref / median_cand with a 95 % bootstrap interval over the paired samples.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from kernel_reward.result import TimingStats
from kernel_reward.tensors import clone_args


@dataclass(frozen=True)
class CallTime:
    """One timed call: event (current-stream) time, and host-bracket time beyond it (side-stream detector)."""

    device_ms: float
    excess_ms: float
    launch_ms: float = 0.0  # host time spent launching the call (start event to end event, host side)

    @property
    def bracket_ms(self) -> float:
        return self.device_ms + max(self.excess_ms, 0.0)


# Excess of the candidate over the reference (medians) that counts as hidden work: the larger of an absolute
# floor (host-clock jitter around a device sync is a few microseconds) and a share of the candidate's own time.
SIDE_STREAM_ABS_MS = 0.02
SIDE_STREAM_REL = 0.10


def select_samples(reference: list[CallTime], candidate: list[CallTime]) -> tuple[list[float], list[float], str]:
    """(reference_ms, candidate_ms, method). Events by default; the host bracket for BOTH sides when the
    candidate leaves work running after its end event (side streams, background launches)."""
    ref_excess = float(np.median([c.excess_ms for c in reference]))
    cand_excess = float(np.median([c.excess_ms for c in candidate]))
    cand_device = float(np.median([c.device_ms for c in candidate]))
    if cand_excess - ref_excess > max(SIDE_STREAM_ABS_MS, SIDE_STREAM_REL * cand_device):
        return [c.bracket_ms for c in reference], [c.bracket_ms for c in candidate], "host_bracket"
    return [c.device_ms for c in reference], [c.device_ms for c in candidate], "events"


@dataclass
class PairedTiming:
    reference_ms: list[float]
    candidate_ms: list[float]
    host_overhead_ms: float
    method: str = "events"  # "events", or "host_bracket" when the candidate left work outside its events
    excess_ms: tuple[float, float] = (0.0, 0.0)  # median (reference, candidate) excess; see CallTime
    reference: TimingStats = field(init=False)
    candidate: TimingStats = field(init=False)
    speedup: float = field(init=False)
    speedup_ci: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.reference = summarize(self.reference_ms)
        self.candidate = summarize(self.candidate_ms)
        self.speedup = speedup_of(self.reference_ms, self.candidate_ms)
        self.speedup_ci = bootstrap_speedup_ci(self.reference_ms, self.candidate_ms)


def summarize(samples_ms: list[float]) -> TimingStats:
    values = np.asarray(samples_ms, dtype=np.float64)
    return TimingStats(
        median_ms=float(np.median(values)),
        mean_ms=float(values.mean()),
        p10_ms=float(np.percentile(values, 10)),
        p90_ms=float(np.percentile(values, 90)),
        num_samples=int(values.size),
    )


def speedup_of(reference_ms: list[float], candidate_ms: list[float]) -> float:
    """median(reference) / median(candidate)."""
    return float(np.median(reference_ms) / max(np.median(candidate_ms), 1e-9))


def bootstrap_speedup_ci(
    reference_ms: list[float], candidate_ms: list[float], *, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the ratio of medians, resampling the (ref, cand) pairs together."""
    ref = np.asarray(reference_ms, dtype=np.float64)
    cand = np.asarray(candidate_ms, dtype=np.float64)
    n = min(ref.size, cand.size)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(resamples, n))  # (B, n)
    ratios = np.median(ref[:n][idx], axis=1) / np.maximum(np.median(cand[:n][idx], axis=1), 1e-9)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def bootstrap_ratio_ci_unpaired(
    reference_ms: list[float], candidate_ms: list[float], *, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of median(reference) / median(candidate), each side resampled on its own
    (for samples that were not taken in pairs, e.g. a reference timed before the candidate was loaded)."""
    ref = np.asarray(reference_ms, dtype=np.float64)
    cand = np.asarray(candidate_ms, dtype=np.float64)
    rng = np.random.default_rng(seed)
    ref_medians = np.median(ref[rng.integers(0, ref.size, size=(resamples, ref.size))], axis=1)
    cand_medians = np.median(cand[rng.integers(0, cand.size, size=(resamples, cand.size))], axis=1)
    low, high = np.percentile(ref_medians / np.maximum(cand_medians, 1e-9), [2.5, 97.5])
    return float(low), float(high)


def timing_args(input_pool: list[list[Any]], call_index: int) -> list[Any]:
    """Fresh buffers for one timed call whose CONTENT differs from call to call.

    A clone of a pooled input set in which, for every floating tensor, two neighbouring elements (flat order,
    position derived from the call index) are swapped. Fresh pointers defeat pointer-keyed caches; the swap
    defeats caches keyed on the values (the pool holds only a few input sets) while keeping every value, and
    almost always every row, as the task generated it -- so the candidate's domain assumptions still hold and
    reference and candidate outputs stay comparable. Both sides of call i get identical inputs.
    """
    args = clone_args(input_pool[call_index % len(input_pool)])
    for tensor in args:
        if isinstance(tensor, torch.Tensor) and tensor.is_floating_point() and tensor.numel() >= 2:
            first = (call_index * 7919 + 13) % (tensor.numel() - 1)
            a = tuple(int(i) for i in np.unravel_index(first, tuple(tensor.shape)))
            b = tuple(int(i) for i in np.unravel_index(first + 1, tuple(tensor.shape)))
            value_a = tensor[a].clone()
            tensor[a] = tensor[b]
            tensor[b] = value_a
    return args


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
            torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.float32, device=device) if l2_flush_mb else None
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
            torch.cuda._sleep(self.spin_cycles)  # ... and spins until the call's first kernel is surely queued
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


class HostTimer:
    """Host clock only (CPU functions). Used to test the timing loop without a GPU; not for reported speedups."""

    host_overhead_ms = 0.0

    def measure(self, fn: Callable[[], Any]) -> tuple[CallTime, Any]:
        start = time.perf_counter()
        output = fn()
        elapsed_ms = (time.perf_counter() - start) * 1e3
        return CallTime(elapsed_ms, 0.0, elapsed_ms), output

    def cover_launches(self, launch_ms: float) -> None:
        pass

    def calibrate(self) -> None:
        pass

    def synchronize(self) -> None:
        pass


class TimingValidationError(Exception):
    """A timed call of the candidate returned a wrong answer (the candidate behaves differently while timed)."""


def time_pair(
    reference: Callable[..., Any],
    candidate: Callable[..., Any],
    input_pool: list[list[Any]],
    device: torch.device,
    *,
    budget_ms: float,
    warmup_calls: int,
    min_calls: int,
    max_calls: int,
    l2_flush_mb: int,
    validate: Callable[[Any, Any], str | None] | None = None,
    validate_calls: int = 4,
    timer: CudaTimer | HostTimer | None = None,
) -> PairedTiming:
    """Interleaved timing of two callables taking the same inputs. Forward calls run under ``torch.no_grad``.

    ``validate(reference_output, candidate_output)`` returns None when they agree, else a reason; it is applied
    (outside the timed region) to about ``validate_calls`` timed calls -- the first, the last and some at random
    positions -- and a disagreement raises ``TimingValidationError``: the answer must stay right while timed.
    """
    timer = timer if timer is not None else CudaTimer(device, l2_flush_mb)
    sides = (reference, candidate)

    def one_call(side: int, call_index: int) -> tuple[CallTime, Any]:
        args = timing_args(input_pool, call_index)
        fn = sides[side]
        with torch.no_grad():
            return timer.measure(lambda: fn(*args))

    with torch.no_grad():
        for call_index in range(warmup_calls):
            for side in (0, 1):
                args = clone_args(input_pool[call_index % len(input_pool)])
                sides[side](*args)
    timer.synchronize()
    launches = [one_call(side, i)[0].launch_ms for side in (0, 1) for i in range(2)]
    timer.cover_launches(max(launches))
    timer.calibrate()
    # The budget is wall-clock time: estimate what one timed pair really costs (flush, spin, syncs, input copies).
    started = time.perf_counter()
    for i in range(3):
        for side in (0, 1):
            one_call(side, i)
    per_pair_ms = (time.perf_counter() - started) * 1e3 / 3
    calls = int(min(max_calls, max(min_calls, budget_ms * 2 / max(per_pair_ms, 1e-3))))
    checked: set[int] = set()
    if validate is not None:
        # The first and last timed calls plus a few at unpredictable positions (fresh OS entropy per run).
        extra = np.random.default_rng().choice(calls, size=min(max(validate_calls - 2, 0), calls), replace=False)
        checked = {0, calls - 1, *extra.tolist()}
    reference_calls: list[CallTime] = []
    candidate_calls: list[CallTime] = []
    for i in range(calls):
        # Alternate which side goes first, so neither always follows the other's cache / clock state.
        order = (0, 1) if i % 2 == 0 else (1, 0)
        outputs: dict[int, Any] = {}
        for side in order:
            call_time, output = one_call(side, i)
            (reference_calls if side == 0 else candidate_calls).append(call_time)
            if i in checked:
                outputs[side] = output
        if i in checked:
            reason = validate(outputs[0], outputs[1])
            if reason is not None:
                raise TimingValidationError(f"timed call {i} of {calls} returned a wrong answer: {reason}")
        del outputs
    reference_ms, candidate_ms, method = select_samples(reference_calls, candidate_calls)
    excess = (float(np.median([c.excess_ms for c in reference_calls])), float(np.median([c.excess_ms for c in candidate_calls])))
    return PairedTiming(reference_ms, candidate_ms, timer.host_overhead_ms, method, excess)
