"""Two runs on the same tasks, compared task by task: the mean difference of a per-task metric and its paired
bootstrap confidence interval (tasks resampled with replacement, the two runs' values kept together).

Pairing by task removes the task-difficulty spread from the comparison: with 64 tasks whose correct rates run from
0 to 1, an unpaired interval would be several times wider than the change a training run makes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class PairedDifference:
    """``mean_b - mean_a`` over ``num_tasks`` tasks, with its ``confidence`` percentile-bootstrap interval."""

    metric: str
    num_tasks: int
    mean_a: float
    mean_b: float
    difference: float
    low: float
    high: float
    confidence: float
    resamples: int

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.low > 0 or self.high < 0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "significant": self.significant}


def paired_difference(
    a: Mapping[str, float],
    b: Mapping[str, float],
    *,
    metric: str = "value",
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> PairedDifference:
    """Compare per-task values ``a[task]`` and ``b[task]`` (the same tasks in both).

    Raises:
        ValueError: the task sets differ (named), a value is missing or not finite, fewer than 2 tasks, or a
            confidence outside (0, 1).
    """
    if set(a) != set(b):
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        raise ValueError(
            f"{metric}: the runs cover different tasks (only in A: {only_a[:5]}, only in B: {only_b[:5]})"
        )
    if len(a) < 2:
        raise ValueError(f"{metric}: need at least 2 tasks to compare, got {len(a)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    tasks = sorted(a)
    values_a = np.array([a[t] if a[t] is not None else np.nan for t in tasks], dtype=float)
    values_b = np.array([b[t] if b[t] is not None else np.nan for t in tasks], dtype=float)
    bad = [
        t
        for t, x, y in zip(tasks, values_a, values_b, strict=True)
        if not (np.isfinite(x) and np.isfinite(y))
    ]
    if bad:
        raise ValueError(f"{metric}: no finite value for task(s) {bad[:5]} in one of the runs")
    differences = values_b - values_a
    rng = np.random.default_rng(seed)
    means = differences[rng.integers(0, len(tasks), size=(resamples, len(tasks)))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return PairedDifference(
        metric=metric,
        num_tasks=len(tasks),
        mean_a=float(values_a.mean()),
        mean_b=float(values_b.mean()),
        difference=float(differences.mean()),
        low=float(low),
        high=float(high),
        confidence=confidence,
        resamples=resamples,
    )


# Per-task summary.json columns worth a paired comparison (kernel_eval.report writes them).
PAIRED_METRICS = ("correct_rate", "fast_1", "fast_1.2")


def paired_summary_differences(
    summary_a: Mapping[str, Any], summary_b: Mapping[str, Any], *, confidence: float = 0.95
) -> list[PairedDifference]:
    """Paired differences of ``PAIRED_METRICS`` between two runs' ``per_task`` tables (a metric absent or without
    timing in either run is skipped)."""
    table_a, table_b = summary_a.get("per_task") or {}, summary_b.get("per_task") or {}
    out = []
    for metric in PAIRED_METRICS:
        a = {task: row.get(metric) for task, row in table_a.items()}
        b = {task: row.get(metric) for task, row in table_b.items()}
        if not a or not b or any(v is None for v in (*a.values(), *b.values())):
            continue
        out.append(paired_difference(a, b, metric=metric, confidence=confidence))
    return out
