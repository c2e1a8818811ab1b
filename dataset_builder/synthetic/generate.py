"""Draw synthetic tasks: one from ``(family, seed)``, or ``count`` distinct ones with the families in turn."""

from __future__ import annotations

import random
from collections.abc import Sequence

from .elementwise import elementwise_task
from .norm import norm_task
from .reduction import reduction_task
from .softmax import softmax_task
from .task import FAMILIES, SyntheticTask

_GENERATORS = {
    "elementwise": elementwise_task,
    "reduction": reduction_task,
    "norm": norm_task,
    "softmax": softmax_task,
}


def generate_task(family: str, seed: int) -> SyntheticTask:
    """The task of ``family`` drawn from ``seed`` (pure: same arguments, same task)."""
    if family not in _GENERATORS:
        raise ValueError(f"unknown synthetic family {family!r}; expected one of {list(FAMILIES)}")
    rng = random.Random(f"{family}:{seed}")  # a string seed is hashed stably across runs and processes
    return _GENERATORS[family](rng, seed)


def generate_tasks(
    count: int, seed: int = 0, families: Sequence[str] = FAMILIES, max_tries_per_task: int = 50
) -> list[SyntheticTask]:
    """``count`` distinct tasks (distinct references), families taken in turn, deterministic from ``seed``.

    Raises:
        ValueError: ``count`` < 0, an unknown family, or a family whose space ran out of distinct tasks.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if not families:
        raise ValueError("families must name at least one family")
    for family in families:
        if family not in _GENERATORS:
            raise ValueError(f"unknown synthetic family {family!r}; expected one of {list(FAMILIES)}")
    tasks: list[SyntheticTask] = []
    seen: set[str] = set()
    draws = {family: 0 for family in families}
    for index in range(count):
        family = families[index % len(families)]
        for _ in range(max_tries_per_task):
            task = generate_task(family, seed * 1_000_003 + draws[family])
            draws[family] += 1
            if task.uuid not in seen:
                break
        else:
            raise ValueError(
                f"family {family!r} gave no new distinct task in {max_tries_per_task} draws "
                f"({sum(t.family == family for t in tasks)} so far); ask for fewer tasks"
            )
        seen.add(task.uuid)
        tasks.append(task)
    return tasks
