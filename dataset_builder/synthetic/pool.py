"""The RL pool's candidates after cold-start SFT: fresh tasks of the variants SFT trained on, in draw order.

``scripts/pipeline.py`` keeps the first solvable ones as ``OUT/sft_data/rl_pool``; ``tools/protocol_test_set.py``
draws them again to find the pool's honest answers. Pure: the same arguments give the same tasks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

from .generate import generate_tasks
from .task import SyntheticTask

PoolAnswers = Literal["seen", "any"]


def rl_pool_candidates(
    sft_tasks: Sequence[SyntheticTask],
    held: Collection[str],
    pool_tasks: int,
    seed: int,
    answers: PoolAnswers = "any",
) -> list[SyntheticTask]:
    """Tasks drawn from ``seed + 1`` (the trained families in sorted order; 4 x ``pool_tasks`` draws) of the variants
    SFT trained on, none an SFT task; with ``answers="seen"`` only those whose honest answer a training task has,
    from 8 x, 32 x or 128 x ``pool_tasks`` draws, the first that gives 2 x ``pool_tasks`` of them (a small SFT set
    teaches few answers). ``held``: the uuids of the held-out SFT tasks.

    Raises:
        ValueError: ``answers`` is neither "seen" nor "any".
    """
    if answers not in ("seen", "any"):
        raise ValueError(f"answers must be 'seen' or 'any', got {answers!r}")
    trained = [task for task in sft_tasks if task.uuid not in held]
    trained_keys = {task.key for task in trained}
    taught = {task.solution for task in trained}
    sft_uuids = {task.uuid for task in sft_tasks}
    families = sorted({key.split("/")[0] for key in trained_keys})

    def drawn(multiple: int) -> list[SyntheticTask]:
        return [
            task
            for task in generate_tasks(multiple * pool_tasks, seed=seed + 1, families=families)
            if task.key in trained_keys
            and task.uuid not in sft_uuids
            and (answers == "any" or task.solution in taught)
        ]

    if answers == "any":
        return drawn(4)
    found: list[SyntheticTask] = []
    for multiple in (8, 32, 128):  # each draw extends the one before: same seed, same order
        try:
            found = drawn(multiple)
        except ValueError:  # a family ran out of distinct tasks: keep what the last draw gave
            break
        if len(found) >= 2 * pool_tasks:
            break
    return found
