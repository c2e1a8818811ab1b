"""Paired GPU timing of reference and candidate in one process (issue 3, step 5; FACTS 7).

Method (one timed call of either side):
  * fresh input buffers cloned from a pool of pre-generated inputs, two neighbouring values swapped per call
    (``timing_args``: pointer- and value-keyed caches cannot replay),
  * the L2 cache flushed by zeroing a buffer larger than L2,
  * ``torch.cuda.synchronize()`` (device-wide, every stream), start event + host clock, the call, end event,
    ``torch.cuda.synchronize()`` again, host clock.
  One sample = max(event time, host time - host overhead), where the host overhead is the same sequence measured
  around an empty call. Events alone miss work queued on side streams (a 190 us GEMM read as 1.4 us); the
  device-wide sync + host clock cannot, and taking the larger keeps the events' precision for honest code.
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


@dataclass
class PairedTiming:
    reference_ms: list[float]
    candidate_ms: list[float]
    host_overhead_ms: float
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


class CudaTimer:
    """Flushed, synchronised, event + host-clock timing of one call on a CUDA device."""

    def __init__(self, device: torch.device, l2_flush_mb: int) -> None:
        self.device = device
        self.flush_buffer = (
            torch.empty(l2_flush_mb * (1 << 20) // 4, dtype=torch.float32, device=device) if l2_flush_mb else None
        )
        self.host_overhead_ms = 0.0

    def measure(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        """(milliseconds, fn's return value)."""
        if self.flush_buffer is not None:
            self.flush_buffer.zero_()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(self.device)
        host_start = time.perf_counter()
        start.record()
        output = fn()
        end.record()
        torch.cuda.synchronize(self.device)
        host_ms = (time.perf_counter() - host_start) * 1e3
        event_ms = start.elapsed_time(end)
        return max(event_ms, host_ms - self.host_overhead_ms), output

    def calibrate(self, repeats: int = 30) -> None:
        """Host-side cost of the timing sequence itself around an empty call (median)."""
        samples = []
        for _ in range(repeats):
            torch.cuda.synchronize(self.device)
            host_start = time.perf_counter()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            end.record()
            torch.cuda.synchronize(self.device)
            samples.append((time.perf_counter() - host_start) * 1e3)
        self.host_overhead_ms = float(np.median(samples))

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)


class HostTimer:
    """Host clock only (CPU functions). Used to test the timing loop without a GPU; not for reported speedups."""

    host_overhead_ms = 0.0

    def measure(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        start = time.perf_counter()
        output = fn()
        return (time.perf_counter() - start) * 1e3, output

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
    timer.calibrate()
    sides = (reference, candidate)

    def one_call(side: int, call_index: int) -> tuple[float, Any]:
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
    estimate_ms = [np.median([one_call(side, i)[0] for i in range(3)]) for side in (0, 1)]
    per_pair_ms = sum(estimate_ms) + 2 * timer.host_overhead_ms
    calls = int(min(max_calls, max(min_calls, budget_ms * 2 / max(per_pair_ms, 1e-3))))
    checked: set[int] = set()
    if validate is not None:
        # The first and last timed calls plus a few at unpredictable positions (fresh OS entropy per run).
        extra = np.random.default_rng().choice(calls, size=min(max(validate_calls - 2, 0), calls), replace=False)
        checked = {0, calls - 1, *extra.tolist()}
    reference_ms, candidate_ms = [], []
    for i in range(calls):
        # Alternate which side goes first, so neither always follows the other's cache / clock state.
        order = (0, 1) if i % 2 == 0 else (1, 0)
        outputs: dict[int, Any] = {}
        for side in order:
            elapsed_ms, output = one_call(side, i)
            (reference_ms if side == 0 else candidate_ms).append(elapsed_ms)
            if i in checked:
                outputs[side] = output
        if i in checked:
            reason = validate(outputs[0], outputs[1])
            if reason is not None:
                raise TimingValidationError(f"timed call {i} of {calls} returned a wrong answer: {reason}")
        del outputs
    return PairedTiming(reference_ms, candidate_ms, timer.host_overhead_ms)
