"""Synthetic kernel tasks with known answers, for cold-start SFT data.

Each task is a reference program in the shipped-task format, at sizes where one Triton-interpreter evaluation
takes about a second, with ``solution`` (an honest ``ModelNew`` whose masked, size-generic Triton kernel does
all of the work), ``flawed`` (a plausible first answer with one realistic bug, so multi-turn data can show a
real correction) and ``flaw`` (one sentence saying what that bug is, for the corrected turn).

Nothing here is trusted: ``dataset_builder.sft_data`` keeps a task only after ``kernel_reward`` judged the
solution ``correct`` and the flawed answer not. Families: ``elementwise``, ``reduction``, ``norm``,
``softmax``; their variants are the split key (``split_tasks``) and are listed in docs/dataset.md. Everything
is a pure function of ``(family, seed)``.

Modules: ``task`` (the record and its families), ``programs`` (the two program templates), ``row_kernels``
(pieces the row families share), one module per family, ``generate`` (draw tasks) and ``split`` (hold variants
out). The names below are the package's public API.
"""

from .generate import generate_task, generate_tasks
from .split import DEFAULT_HELD_OUT, Split, split_keys, split_tasks
from .task import FAMILIES, VARIANTS, Family, SyntheticTask

__all__ = [
    "DEFAULT_HELD_OUT",
    "FAMILIES",
    "VARIANTS",
    "Family",
    "Split",
    "SyntheticTask",
    "generate_task",
    "generate_tasks",
    "split_keys",
    "split_tasks",
]
