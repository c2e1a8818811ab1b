"""Split synthetic tasks into training and held-out tasks by ``family/variant`` key."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from .task import FAMILIES, VARIANTS, SyntheticTask

# Held out by default: one variant of each row family (about 30 % of tasks), each a different computation from
# every training variant of its family (not a re-parameterisation of one), so held-out tasks are not
# near-duplicates of training tasks. Elementwise chains all train: their variants share single ops.
DEFAULT_HELD_OUT: tuple[str, ...] = ("reduction/amax", "norm/rms_norm", "softmax/log_softmax")


@dataclass(frozen=True)
class Split:
    """Tasks split by ``family/variant`` key: no key is on both sides."""

    train: list[SyntheticTask]
    held_out: list[SyntheticTask]


def split_keys(held_out: Collection[str]) -> frozenset[str]:
    """Expand held-out names (``family`` or ``family/variant``) into the ``family/variant`` keys they cover."""
    keys: set[str] = set()
    for name in held_out:
        family, _, variant = name.partition("/")
        if family not in VARIANTS or (variant and variant not in VARIANTS[family]):
            known = [f"{f}/{v}" for f, vs in VARIANTS.items() for v in vs]
            raise ValueError(
                f"unknown held-out name {name!r}; use a family {list(FAMILIES)} or one of {known}"
            )
        keys.update(f"{family}/{v}" for v in ((variant,) if variant else VARIANTS[family]))
    return frozenset(keys)


def split_tasks(tasks: Iterable[SyntheticTask], held_out: Collection[str] = DEFAULT_HELD_OUT) -> Split:
    """Split by ``family/variant``: a task is held out iff its key is named (directly or by its family).

    The split is by key, not by task, so no held-out task is a re-parameterisation of a training task.
    """
    keys = split_keys(held_out)
    train: list[SyntheticTask] = []
    kept: list[SyntheticTask] = []
    for task in tasks:
        (kept if task.key in keys else train).append(task)
    return Split(train=train, held_out=kept)
