"""Pure evaluation metrics over per-turn outcomes (no I/O, no evaluator, no trainer state).

Definitions follow KernelBench / DR.Kernel (background §5; docs/evaluation.md has the reasons):

- Every rate is a share of ALL samples (trajectories), never of the ones that compiled or were timed.
- ``correct`` means the evaluator said "correct": a hacked sample is never correct, whatever its outputs.
- Fast@p = share of all samples that are correct AND have a measured speedup >= p over the baseline;
  ``fast_p_lower`` asks the same of the lower end of the speedup's 95 % interval. Fast@p is ``None``
  ("unknown"), not 0, when the run has no timing at all (CPU / Triton interpreter); in a timed run, a correct
  sample without timing counts as not fast (fail closed) and in ``num_correct_untimed``.
- Per-turn metrics at turn t use each trajectory's outcome at turn t; a trajectory that ended before turn t
  keeps its last turn.
- Best-of-history picks, per trajectory, the best turn so far: correct beats not correct, then higher speedup,
  then higher reward, then the earlier turn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kernel_reward.result import EvalResult, Status

FAST_P_THRESHOLDS: tuple[float, ...] = (1.0, 1.2, 1.5, 2.0)


def p_key(p: float) -> str:
    """The summary key of a Fast@p threshold: 1.0 -> "1", 1.2 -> "1.2", 2.0 -> "2"."""
    return f"{p:g}"


@dataclass(frozen=True)
class Outcome:
    """What the metrics need to know about one evaluated turn."""

    formatted: bool  # a code block could be extracted
    compiled: bool
    correct: bool  # evaluator verdict "correct" (never true for a hacked sample)
    hacked: bool
    speedup: float | None = None
    speedup_low: float | None = None  # lower end of the speedup's 95 % interval (None: no interval)
    coverage: float | None = None
    reward: float = 0.0
    timed: bool = False  # evaluated where timing is measured (GPU), even if this turn never got that far

    def __post_init__(self) -> None:
        if self.correct and self.hacked:
            raise ValueError("Outcome: a hacked sample cannot be correct (hacked counts as incorrect)")
        if self.correct and not self.compiled:
            raise ValueError("Outcome: a correct sample must have compiled")
        if self.speedup is not None and not (self.speedup > 0 and math.isfinite(self.speedup)):
            raise ValueError(f"Outcome: speedup must be a finite positive number, got {self.speedup!r}")
        if self.speedup_low is not None and not (0 <= self.speedup_low and math.isfinite(self.speedup_low)):
            raise ValueError(f"Outcome: speedup_low must be a finite number >= 0, got {self.speedup_low!r}")

    @classmethod
    def from_result(cls, result: EvalResult) -> Outcome:
        status = Status(result.status)
        hacked = bool(result.hacked) or status is Status.HACKED
        correct = status is Status.CORRECT and bool(result.correct) and not hacked
        return cls(
            formatted=status is not Status.FORMAT_ERROR,
            compiled=bool(result.compiled) or correct,
            correct=correct,
            hacked=hacked,
            speedup=result.speedup if result.timing_available else None,
            speedup_low=result.speedup_ci[0] if result.timing_available and result.speedup_ci else None,
            coverage=result.coverage,
            reward=float(result.reward),
            # A GPU run that produced only format errors still had timing: its Fast@p is 0, not unknown.
            timed=bool(result.timing_available) or result.mode == "gpu",
        )


@dataclass
class TurnMetrics:
    """Metrics of one set of samples (one turn, or the final turn)."""

    num_samples: int
    format_rate: float
    compile_rate: float
    correct_rate: float
    hacked_rate: float
    fast_p: dict[str, float | None]
    fast_p_lower: dict[str, float | None]  # Fast@p by the lower end of each speedup's 95 % interval
    mean_speedup: float | None  # arithmetic mean over correct samples with a speedup
    geomean_speedup: float | None  # geometric mean over the same samples
    mean_coverage: float | None  # mean PR coverage over correct samples that report one
    mean_reward: float
    num_correct_untimed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class BestOfHistoryMetrics:
    """Metrics of each trajectory's best turn so far (background §5: "best turn across the history")."""

    num_samples: int
    correct_rate: float
    fast_p: dict[str, float | None]
    fast_p_lower: dict[str, float | None]
    mean_speedup: float | None
    geomean_speedup: float | None
    best_turn_histogram: dict[str, int] = field(default_factory=dict)  # turn (1-based, as str) -> count

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _share(count: int, total: int) -> float:
    return count / total if total else 0.0


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _geomean(values: Sequence[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fast_p(
    outcomes: Sequence[Outcome], p: float, *, timing_available: bool, lower: bool = False
) -> float | None:
    """Share of ALL ``outcomes`` that are correct with speedup >= ``p`` (``lower``: the lower end of its 95 %
    interval >= ``p``; a speedup without an interval is its own lower end); None when the run had no timing."""
    if not timing_available:
        return None
    fast = sum(1 for o in outcomes if o.correct and o.speedup is not None and _speed(o, lower) >= p)
    return _share(fast, len(outcomes))


def _speed(outcome: Outcome, lower: bool) -> float:
    if lower and outcome.speedup_low is not None:
        return outcome.speedup_low
    return outcome.speedup if outcome.speedup is not None else 0.0


def _speedups_of_correct(outcomes: Sequence[Outcome]) -> list[float]:
    return [o.speedup for o in outcomes if o.correct and o.speedup is not None]


def turn_metrics(
    outcomes: Sequence[Outcome],
    *,
    timing_available: bool,
    thresholds: Sequence[float] = FAST_P_THRESHOLDS,
) -> TurnMetrics:
    """Rates, Fast@p and speedup statistics of one set of samples (all shares of ``len(outcomes)``)."""
    n = len(outcomes)
    speedups = _speedups_of_correct(outcomes)
    coverages = [o.coverage for o in outcomes if o.correct and o.coverage is not None]
    return TurnMetrics(
        num_samples=n,
        format_rate=_share(sum(o.formatted for o in outcomes), n),
        compile_rate=_share(sum(o.compiled for o in outcomes), n),
        correct_rate=_share(sum(o.correct for o in outcomes), n),
        hacked_rate=_share(sum(o.hacked for o in outcomes), n),
        fast_p={p_key(p): fast_p(outcomes, p, timing_available=timing_available) for p in thresholds},
        fast_p_lower={
            p_key(p): fast_p(outcomes, p, timing_available=timing_available, lower=True) for p in thresholds
        },
        mean_speedup=_mean(speedups),
        geomean_speedup=_geomean(speedups),
        mean_coverage=_mean(coverages),
        mean_reward=_mean([o.reward for o in outcomes]) or 0.0,
        num_correct_untimed=sum(1 for o in outcomes if o.correct and o.speedup is None)
        if timing_available
        else 0,
    )


def outcome_at_turn(trajectory: Sequence[Outcome], turn: int) -> Outcome:
    """The outcome of ``trajectory`` at 1-based ``turn``; a trajectory that ended earlier keeps its last turn."""
    if not trajectory:
        raise ValueError("outcome_at_turn: empty trajectory")
    if turn < 1:
        raise ValueError(f"outcome_at_turn: turns are 1-based, got {turn}")
    return trajectory[min(turn, len(trajectory)) - 1]


def _rank(outcome: Outcome) -> tuple[bool, float, float]:
    speed = outcome.speedup if (outcome.correct and outcome.speedup is not None) else -math.inf
    return (outcome.correct, speed, outcome.reward)


def best_turn_index(trajectory: Sequence[Outcome]) -> int:
    """0-based index of the best turn: correct first, then speedup, then reward; ties go to the earlier turn."""
    if not trajectory:
        raise ValueError("best_turn_index: empty trajectory")
    best = 0
    for i in range(1, len(trajectory)):
        if _rank(trajectory[i]) > _rank(trajectory[best]):
            best = i
    return best


def best_of_history_metrics(
    trajectories: Sequence[Sequence[Outcome]],
    *,
    timing_available: bool,
    thresholds: Sequence[float] = FAST_P_THRESHOLDS,
) -> BestOfHistoryMetrics:
    """Metrics over the best turn of every trajectory."""
    best_indices = [best_turn_index(t) for t in trajectories]
    best = [t[i] for t, i in zip(trajectories, best_indices, strict=True)]
    speedups = _speedups_of_correct(best)
    histogram: dict[str, int] = {}
    for i in best_indices:
        histogram[str(i + 1)] = histogram.get(str(i + 1), 0) + 1
    return BestOfHistoryMetrics(
        num_samples=len(best),
        correct_rate=_share(sum(o.correct for o in best), len(best)),
        fast_p={p_key(p): fast_p(best, p, timing_available=timing_available) for p in thresholds},
        fast_p_lower={
            p_key(p): fast_p(best, p, timing_available=timing_available, lower=True) for p in thresholds
        },
        mean_speedup=_mean(speedups),
        geomean_speedup=_geomean(speedups),
        best_turn_histogram=dict(sorted(histogram.items(), key=lambda kv: int(kv[0]))),
    )


@dataclass
class RunMetrics:
    """Everything the summary reports: final-turn metrics, one entry per turn, best-of-history."""

    num_turns: int
    timing_available: bool
    final: TurnMetrics
    per_turn: list[TurnMetrics]
    best_of_history: BestOfHistoryMetrics
    best_so_far: list[BestOfHistoryMetrics]  # best-of-history over turns 1..t, for each turn t


def run_metrics(
    trajectories: Sequence[Sequence[Outcome]], *, thresholds: Sequence[float] = FAST_P_THRESHOLDS
) -> RunMetrics:
    """Per-turn, final-turn and best-of-history metrics of a set of trajectories (one per sample).

    Timing counts as available when any evaluated turn of the run was timed.
    """
    if not trajectories:
        raise ValueError("run_metrics: no trajectories to score")
    for i, trajectory in enumerate(trajectories):
        if not trajectory:
            raise ValueError(f"run_metrics: trajectory {i} has no turns")
    num_turns = max(len(t) for t in trajectories)
    timing_available = any(o.timed for t in trajectories for o in t)
    per_turn = [
        turn_metrics(
            [outcome_at_turn(t, turn) for t in trajectories],
            timing_available=timing_available,
            thresholds=thresholds,
        )
        for turn in range(1, num_turns + 1)
    ]
    return RunMetrics(
        num_turns=num_turns,
        timing_available=timing_available,
        final=per_turn[-1],
        per_turn=per_turn,
        best_of_history=best_of_history_metrics(
            trajectories, timing_available=timing_available, thresholds=thresholds
        ),
        best_so_far=[
            best_of_history_metrics(
                [t[:turn] for t in trajectories], timing_available=timing_available, thresholds=thresholds
            )
            for turn in range(1, num_turns + 1)
        ],
    )
