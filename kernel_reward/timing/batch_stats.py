"""Per-call times from the judge's timed batches, pure: fixed-cost subtraction, which reference samples count,
the flags a result carries, and the summary of one measurement (``BatchTiming``). ``batch_clock`` produces the
batches; nothing here touches a GPU."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kernel_reward.result import TimingStats
from kernel_reward.timing.statistics import (
    bootstrap_ratio_ci_unpaired,
    bootstrap_speedup_ci,
    speedup_of,
    summarize,
)

SLOWDOWN_FLAG_RATIO = 1.05  # reference slower while the candidate was loaded than before: flagged beyond this
NOISE_SHARE = (
    0.05  # a batch's fixed-cost spread above this share of its work: per-call times are mostly noise
)
HANDOFF_SHARE = 0.25  # the candidate's hand-over cost above this share of a batch's work is flagged


@dataclass(frozen=True)
class Overhead:
    """Each side's fixed cost of one batch (ms on the judge's clock, median of empty batches), the larger side's
    spread, and the wall-clock time of an empty reference batch (host work included: what sizes the number of
    reference batches to the budget; 0 when unknown)."""

    reference_ms: float
    candidate_ms: float
    spread_ms: float
    reference_wall_ms: float = 0.0
    output_copy_ms: float = (
        0.0  # of candidate_ms: the copies of one batch's outputs into the arena (batch_clock)
    )
    handover_kernel_ms: float = (
        0.0  # already taken out of candidate_ms: the dry batch's own kernel (calibration)
    )

    def with_output_copies(self, copy_ms: float) -> Overhead:
        """Pure: the candidate's fixed cost with one batch's output copies added (they are the harness's)."""
        return dataclasses.replace(self, candidate_ms=self.candidate_ms + copy_ms, output_copy_ms=copy_ms)

    def to_json(self) -> dict[str, float]:
        return {
            "reference_ms": self.reference_ms,
            "candidate_ms": self.candidate_ms,
            "spread_ms": self.spread_ms,
            "reference_wall_ms": self.reference_wall_ms,
            "output_copy_ms": self.output_copy_ms,
            "handover_kernel_ms": self.handover_kernel_ms,
        }


@dataclass
class BatchTiming:
    """Per-call times (ms) of both sides, and how they were obtained."""

    reference_ms: list[float]
    candidate_ms: list[float]
    calls_per_batch: int
    overhead: Overhead  # empty-batch time subtracted from each batch of its side
    reference_phase: str  # "interleaved" or "before_candidate": which reference samples were used
    reference_before_ms: float  # median per-call time of the reference before the candidate was loaded
    method: str
    flags: list[str] = field(default_factory=list)
    diagnostics: dict[str, Any] = field(default_factory=dict)
    batches_ms: tuple[list[float], list[float]] = ([], [])  # (reference, candidate) whole interleaved batches
    reference: TimingStats = field(init=False)
    candidate: TimingStats = field(init=False)
    speedup: float = field(init=False)
    speedup_ci: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.reference = summarize(self.reference_ms)
        self.candidate = summarize(self.candidate_ms)
        self.speedup = speedup_of(self.reference_ms, self.candidate_ms)
        paired = self.reference_phase == "interleaved" and len(self.reference_ms) == len(self.candidate_ms)
        ci = bootstrap_speedup_ci if paired else bootstrap_ratio_ci_unpaired
        self.speedup_ci = ci(self.reference_ms, self.candidate_ms)

    def describe(self) -> dict[str, Any]:
        """What ``EvalResult.timing_method`` records."""
        return {
            "method": self.method,
            "calls_per_batch": self.calls_per_batch,
            **self.overhead.to_json(),
            "reference_phase": self.reference_phase,
            "reference_before_ms": self.reference_before_ms,
            "diagnostics": self.diagnostics,
        }


def unsubtracted(timing: BatchTiming) -> BatchTiming:
    """Pure: the same interleaved batches with each side's fixed cost left in (per call: batch / K). It can only
    make the candidate look slower (its fixed cost holds the hand-over to the runner as well), so it is the
    fallback when the subtracted speedup stays implausible because of a ``calibration_artefact``: a calibration
    made while the GPU was time-sliced with other processes can exceed the batches it is subtracted from and read
    an honest kernel as 10^5x."""
    reference, candidate = timing.batches_ms
    calls = max(timing.calls_per_batch, 1)
    return BatchTiming(
        [ms / calls for ms in reference],
        [ms / calls for ms in candidate],
        timing.calls_per_batch,
        Overhead(0.0, 0.0, timing.overhead.spread_ms, timing.overhead.reference_wall_ms),
        "interleaved",
        timing.reference_before_ms,
        timing.method,
        [*timing.flags, "timing_unsubtracted"],
        timing.diagnostics,
        timing.batches_ms,
    )


CALIBRATION_ARTEFACT_SHARE = (
    0.25  # this share of a side's batches at or below its fixed cost: subtraction is void
)


def calibration_artefact(timing: BatchTiming) -> bool:
    """Pure: did a quarter or more of either side's interleaved batches last no longer than the fixed cost
    subtracted from them? Then per-call times are clamped near zero and the speedup says nothing (a calibration
    made while the GPU was time-sliced with other processes); ``unsubtracted`` is the fallback. An honest fast
    kernel stays far from this: its batches are its fixed cost plus its work."""
    reference, candidate = timing.batches_ms
    return any(
        sum(ms <= fixed for ms in batches) >= CALIBRATION_ARTEFACT_SHARE * len(batches)
        for batches, fixed in (
            (reference, timing.overhead.reference_ms),
            (candidate, timing.overhead.candidate_ms),
        )
        if batches
    )


def own_share(candidate_ms: list[float], ablated_ms: list[float]) -> float | None:
    """Pure: the share of a candidate call's time its own kernels account for, on the judge's clock: 1 - (median
    per-call time with its own launches skipped) / (median per-call time of its timed calls), within [0, 1]; None
    without ablated samples or timed time. A cross-check of the runner's coverage that no runner number enters,
    though the ablation itself happens in the runner (docs/security.md)."""
    if not ablated_ms or not candidate_ms:
        return None
    timed = float(np.median(candidate_ms))
    if timed <= 0:
        return None
    return min(max(1.0 - float(np.median(ablated_ms)) / timed, 0.0), 1.0)


def per_call_ms(batch_ms: float, empty_ms: float, calls: int) -> float:
    """Pure: one call's share of a batch once the side's fixed cost is taken out (never below a nanosecond)."""
    return max(batch_ms - empty_ms, 1e-6) / max(calls, 1)


def pick_reference(before: list[float], during: list[float]) -> tuple[list[float], str, bool]:
    """Pure: the reference samples with the lower median (a candidate cannot gain by slowing the reference down),
    their phase, and whether the reference ran notably slower while the candidate was loaded."""
    slower = float(np.median(during)) > SLOWDOWN_FLAG_RATIO * float(np.median(before))
    if float(np.median(before)) < float(np.median(during)):
        return before, "before_candidate", slower
    return during, "interleaved", slower


def noise_dominated(spread_ms: float, per_call: float, calls: int) -> bool:
    """Pure: does the fixed cost of a batch vary by more than ``NOISE_SHARE`` of the work it times? Then the
    per-call times are mostly that variation, and the result says so."""
    return spread_ms > NOISE_SHARE * per_call * calls


HOST_SYNC_SHARE = (
    0.5  # the candidate's timed pairs whose gate the watchdog had to open, above which it synced
)


def host_synced(late_pairs: int, pairs: int, late_reference: int, reference_batches: int) -> bool:
    """Pure: did the candidate's forward synchronise the host? A forward that waits for the GPU while its batch is
    being queued behind the closed gate can only go on once the judge's watchdog opens it (after 20 ms; so can a
    batch whose queueing alone takes longer): when that happened for most timed pairs and (almost) never for the
    reference's own batches, the waiting was the candidate's. Such syncs cost more on the judge's clock than in
    one process (H200: a ``.item()`` per call read 0.14x, do_bench 0.50x), so the result says so
    (``timing_host_sync``); it only ever explains a slower reading."""
    if pairs <= 0:
        return False
    return late_pairs >= HOST_SYNC_SHARE * pairs and late_reference <= 0.1 * max(reference_batches, 1)


def handoff_dominated(overhead: Overhead, per_call: float, calls: int) -> bool:
    """Pure: is the hand-over to the runner and back (the candidate side's extra fixed cost, calibrated with the
    trusted runner and subtracted) more than a quarter of a batch's work? A candidate that could hand over faster
    than the trusted harness would gain at most that much per batch, so the result says when it is large."""
    handoff = overhead.candidate_ms - overhead.output_copy_ms - overhead.reference_ms
    return handoff > HANDOFF_SHARE * per_call * calls


def calls_per_batch(reference_call_ms: float, target_batch_ms: float, max_slots: int) -> int:
    """Pure: calls per batch so a batch lasts about ``target_batch_ms``, within the slots the arena holds."""
    return int(min(max(1, math.ceil(target_batch_ms / max(reference_call_ms, 1e-4))), max_slots))


def order_speedups(reference_ms: list[float], candidate_ms: list[float]) -> dict[str, float]:
    """Pure: the speedup of the pairs where the reference went first (even indices) and of those where the
    candidate did (odd): a diagnostic of how much a batch's place in its pair weighs."""
    out = {}
    for name, start in (("reference_first_speedup", 0), ("candidate_first_speedup", 1)):
        ref, cand = reference_ms[start::2], candidate_ms[start::2]
        if ref and cand:
            out[name] = speedup_of(ref, cand)
    return out
