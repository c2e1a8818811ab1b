"""Paired GPU timing of reference and candidate in one process (background §7), a yardstick beside the judge.

One timed call of either side: fresh input buffers (``timing_args``: pointer- and value-keyed caches cannot
replay), a device-wide ``torch.cuda.synchronize()`` and the host clock, then the queued L2 flush and a
calibrated GPU spin covering the call's launch, the start event, the call, the end event, a second device-wide
sync and the host clock. Two readings per call (``CallTime``): ``device_ms`` from the events and
``excess_ms``, the host bracket beyond the events less that of an empty call. ``select_samples`` times both
sides by the host bracket when the candidate's excess exceeds the reference's beyond noise (work hidden on a
side stream). Reference and candidate calls alternate; the number of calls comes from a quick estimate and
``budget_ms``. speedup = median_ref / median_cand with a 95 % bootstrap interval over the paired samples.
benchmarks/README.md (inprocess_timer.py) gives the reasons for this order.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from kernel_reward.common.tensors import clone_args
from kernel_reward.result import TimingStats
from kernel_reward.runner.cuda_timer import CallTime, CudaTimer
from kernel_reward.timing.statistics import TimingValidationError, bootstrap_speedup_ci, speedup_of, summarize

# Excess of the candidate over the reference (medians) that counts as hidden work: the larger of an absolute
# floor (host-clock jitter around a device sync is a few microseconds) and a share of the candidate's own time.
SIDE_STREAM_ABS_MS = 0.02


SIDE_STREAM_REL = 0.10


def select_samples(
    reference: list[CallTime], candidate: list[CallTime]
) -> tuple[list[float], list[float], str]:
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
        extra = np.random.default_rng().choice(
            calls, size=min(max(validate_calls - 2, 0), calls), replace=False
        )
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
    excess = (
        float(np.median([c.excess_ms for c in reference_calls])),
        float(np.median([c.excess_ms for c in candidate_calls])),
    )
    return PairedTiming(reference_ms, candidate_ms, timer.host_overhead_ms, method, excess)
