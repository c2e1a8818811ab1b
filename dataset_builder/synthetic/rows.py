"""Synthetic tasks as RL dataset rows (``dataset_builder.FEATURES``): what the trainer and the evaluation harness
read, one row per task with the first-turn prompt built from the reference."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .task import SyntheticTask

DATA_SOURCE = "drkernel_rl_synthetic"


def task_row(task: SyntheticTask) -> dict[str, Any]:
    """The dataset row of one synthetic task (verl's row schema, as the shipped tasks' rows)."""
    from dataset_builder.prompt import first_turn_messages

    return {
        "data_source": DATA_SOURCE,
        "prompt": first_turn_messages(task.reference),
        "ability": "kernel_optimization",
        "reward_model": {"style": "rule", "ground_truth": task.reference},
        "extra_info": {
            "entry_point": "Model",
            "level": task.level,
            "module_name": task.uuid,
            "ops": list(task.ops),
            "original_prompt": [],
            "repo_name": "drkernel-rl",
            "type": task.family,
            "uuid": task.uuid,
        },
    }


def write_task_dataset(tasks: Sequence[SyntheticTask], folder: str | Path) -> Path:
    """Write ``tasks`` as a one-shard dataset folder ``load_dataset(folder)`` reads; returns the Parquet file."""
    from datasets import Dataset

    from dataset_builder import FEATURES

    if not tasks:
        raise ValueError(f"no tasks to write to {folder}")
    path = Path(folder) / "data" / "train-00000-of-00001.parquet"
    Dataset.from_list([task_row(task) for task in tasks], features=FEATURES).to_parquet(str(path))
    return path
