"""The timing slot's phase profile: seconds per step (``kernel_reward.timing.spans``) by task size, as a table.

Pure functions over rows that carry ``slot_s`` (step -> seconds, one evaluation's) and ``call_mb`` (the MiB one
call reads and writes). ``bench_reward.py --sections fidelity_judge`` fills them for the shipped tasks timed
against themselves; the throughput benchmark's rows carry the same steps in their phase seconds.
"""

from __future__ import annotations

import statistics
from typing import Any

from kernel_reward.timing.spans import PAIR_STEPS, SLOT_STEPS

# Size classes by the MiB one call moves (inputs and outputs); the shipped tasks span 64-1024 MiB.
SIZE_BOUNDS_MB = ((160.0, "small"), (400.0, "medium"), (float("inf"), "large"))


def size_class(call_mb: float) -> str:
    return next(name for bound, name in SIZE_BOUNDS_MB if call_mb < bound)


def slot_steps(seconds: dict[str, float]) -> dict[str, float]:
    """Pure: the slot and pair steps of one evaluation's phase seconds, in ``SLOT_STEPS`` / ``PAIR_STEPS`` order,
    with ``slot.total`` (the slot steps' sum; pair steps are inside them)."""
    steps = {name: seconds[name] for name in (*SLOT_STEPS, *PAIR_STEPS) if name in seconds}
    steps["slot.total"] = sum(seconds.get(name, 0.0) for name in SLOT_STEPS)
    return steps


def profile_by_size(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pure: mean seconds per step for each size class present (one output row per step), plus each class's
    task count; rows without ``slot_s`` are skipped."""
    groups: dict[str, list[dict[str, float]]] = {}
    for row in rows:
        if row.get("slot_s"):
            groups.setdefault(size_class(row["call_mb"]), []).append(slot_steps(row["slot_s"]))
    classes = [name for _, name in SIZE_BOUNDS_MB if name in groups]
    names = [
        n for n in (*SLOT_STEPS, *PAIR_STEPS, "slot.total") if any(n in g for c in classes for g in groups[c])
    ]
    table = [{"step": "tasks", **{c: len(groups[c]) for c in classes}}]
    for name in names:
        table.append(
            {"step": name, **{c: statistics.fmean(g.get(name, 0.0) for g in groups[c]) for c in classes}}
        )
    return table
