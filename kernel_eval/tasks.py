"""Evaluation tasks: rows of a drkernel dataset (``FEATURES``) turned into typed tasks, with filters.

A task needs the reference program (``reward_model.ground_truth``), the first-turn prompt, and an id. The id is
``extra_info.uuid``; KernelBench-style validation rows that carry ``{name, problem_id}`` instead get
``extra_info.name`` (then ``problem_id``) so they can still be named in saved completions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EvalTask:
    """One task to evaluate."""

    uuid: str
    reference_code: str
    prompt: tuple[dict[str, str], ...]  # the first-turn chat messages
    level: str = ""
    entry_point: str = "Model"


def task_from_row(row: Mapping[str, Any], index: int) -> EvalTask:
    """Build a task from one dataset row; raises ValueError naming the row index and the missing field."""
    where = f"dataset row {index}"
    reward_model = row.get("reward_model") or {}
    reference = reward_model.get("ground_truth")
    if not isinstance(reference, str) or not reference.strip():
        raise ValueError(f"{where}: reward_model.ground_truth (the reference program) is missing or empty")
    prompt = row.get("prompt")
    if not prompt or not all(isinstance(m, Mapping) and "role" in m and "content" in m for m in prompt):
        raise ValueError(f"{where}: prompt must be a non-empty list of {{role, content}} messages")
    extra = row.get("extra_info") or {}
    uuid = (
        extra.get("uuid")
        or extra.get("name")
        or (str(extra["problem_id"]) if extra.get("problem_id") is not None else None)
    )
    if not uuid:
        raise ValueError(f"{where}: extra_info has no uuid (nor name / problem_id) to identify the task")
    return EvalTask(
        uuid=str(uuid),
        reference_code=reference,
        prompt=tuple({"role": str(m["role"]), "content": str(m["content"])} for m in prompt),
        level=str(extra.get("level") if extra.get("level") is not None else extra.get("difficulty") or ""),
        entry_point=str(extra.get("entry_point") or "Model"),
    )


def tasks_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[EvalTask]:
    """Tasks from dataset rows; duplicate ids are an error (saved completions could not tell them apart)."""
    tasks: list[EvalTask] = []
    seen: dict[str, int] = {}
    for index, row in enumerate(rows):
        task = task_from_row(row, index)
        if task.uuid in seen:
            raise ValueError(f"dataset rows {seen[task.uuid]} and {index} share the task id {task.uuid!r}")
        seen[task.uuid] = index
        tasks.append(task)
    return tasks


def filter_tasks(
    tasks: Sequence[EvalTask],
    *,
    levels: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    limit: int | None = None,
) -> list[EvalTask]:
    """Keep tasks of the given levels and ids (unknown ids are an error), then the first ``limit``."""
    selected = list(tasks)
    if ids:
        known = {t.uuid for t in tasks}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise ValueError(f"--ids: no task with id(s) {unknown} in the dataset ({len(tasks)} tasks)")
        wanted = set(ids)
        selected = [t for t in selected if t.uuid in wanted]
    if levels:
        wanted_levels = {str(level) for level in levels}
        selected = [t for t in selected if t.level in wanted_levels]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"--limit must be >= 1, got {limit}")
        selected = selected[:limit]
    if not selected:
        raise ValueError(f"no task left after the filters (levels={levels}, ids={ids}, limit={limit})")
    return selected


class DatasetUnavailable(ValueError):
    """The dataset cannot be loaded: no such folder or Hub dataset, or a folder without data files."""


def load_dataset_tasks(dataset: str, *, split: str | None = None) -> list[EvalTask]:
    """Tasks of a dataset folder (built by dataset_builder) or a ``load_dataset`` name.

    ``split=None`` takes "train" when present, else the only split; anything else must name a split.
    """
    import datasets  # heavy import, only when a dataset is actually loaded

    source = str(Path(dataset)) if Path(dataset).exists() else dataset
    try:
        loaded = datasets.load_dataset(source)
    except FileNotFoundError as exc:  # also datasets' DatasetNotFoundError and EmptyDatasetError
        raise DatasetUnavailable(
            f"cannot load dataset {dataset!r}: {str(exc).splitlines()[0]} "
            "(build one with: python -m dataset_builder build --format sample --out DIR)"
        ) from exc
    names = list(loaded.keys())
    if split is None:
        split = "train" if "train" in names else (names[0] if len(names) == 1 else None)
        if split is None:
            raise ValueError(f"dataset {dataset!r} has splits {names}; choose one with --split")
    if split not in names:
        raise ValueError(f"dataset {dataset!r} has no split {split!r}; it has {names}")
    logger.info("loaded %d rows from %s [%s]", len(loaded[split]), dataset, split)
    return tasks_from_rows(loaded[split])
