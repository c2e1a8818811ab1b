"""What a synthetic task is: the families and variants it may be, the ``SyntheticTask`` record, its uuid."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

Family = Literal["elementwise", "reduction", "norm", "softmax"]
FAMILIES: tuple[str, ...] = ("elementwise", "reduction", "norm", "softmax")
VARIANTS: dict[str, tuple[str, ...]] = {
    "elementwise": ("unary", "binary"),
    "reduction": ("sum", "mean", "amax"),
    "norm": ("layer_norm", "rms_norm"),
    "softmax": ("softmax", "log_softmax"),
}


@dataclass(frozen=True)
class SyntheticTask:
    """One generated task and its two answers (programs, not completions).

    Attributes:
        uuid: ``synthetic_<family>_<hash of the reference>``; equal references get equal uuids.
        family, variant: what was generated; ``key`` (``family/variant``) is the split unit.
        level: ``"1"`` for a single op, ``"2"`` for a fused chain (as ``extra_info.level``).
        ops: the torch ops the reference uses.
        reference: the reference program (shipped-task format, small sizes).
        solution: the honest ``ModelNew`` program.
        flawed: the buggy ``ModelNew`` program.
        plan: one sentence describing the kernel, opening both first answers.
        flaw: one sentence naming the bug of ``flawed`` and its fix, opening the corrected answer.
        seed: the seed it was generated from.
    """

    uuid: str
    family: str
    variant: str
    level: str
    ops: tuple[str, ...]
    reference: str
    solution: str
    flawed: str
    plan: str
    flaw: str
    seed: int

    @property
    def key(self) -> str:
        return f"{self.family}/{self.variant}"

    def as_task(self):
        """The reference as a ``dataset_builder.tasks.Task`` (so the dataset builder can use it as a row)."""
        from dataset_builder.tasks import Task

        return Task(
            name=self.uuid,
            category=self.family,
            level=self.level,
            ops=self.ops,
            source=self.reference,
            preset="small",
        )


def make_task(
    family: str,
    variant: str,
    seed: int,
    level: str,
    ops: tuple[str, ...],
    reference: str,
    solution: str,
    flawed: str,
    *,
    plan: str,
    flaw: str,
) -> SyntheticTask:
    digest = hashlib.sha256(reference.encode("utf-8")).hexdigest()[:12]
    return SyntheticTask(
        uuid=f"synthetic_{family}_{digest}",
        family=family,
        variant=variant,
        level=level,
        ops=ops,
        reference=reference,
        solution=solution,
        flawed=flawed,
        plan=plan,
        flaw=flaw,
        seed=seed,
    )
