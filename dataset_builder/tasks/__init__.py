"""The task set shipped inside the package: KernelBench-style PyTorch reference programs written for drkernel-rl.

Every other ``*.py`` file in this folder is one task: a self-contained program with a module docstring,
module-level UPPER_CASE integer size constants (realistic GPU sizes), ``class Model(nn.Module)``,
``get_inputs()`` and ``get_init_inputs()``. Each file also declares, as plain literals read here with ``ast``
(task files are never imported by this module):

- ``SMALL``: ``{"CONSTANT": int, ...}``, the sizes of the ``small`` preset: the same program at sizes where one
  Triton-interpreter evaluation of a candidate takes about a second (DESIGN "Conventions");
- ``CATEGORY`` (e.g. ``"norm"``), ``LEVEL`` (``"1"`` single op, ``"2"`` fused chain) and ``OPS`` (the torch ops
  used, stored by the builder in ``extra_info.ops``); all three optional.

``Task.source`` is the program a model is shown and a candidate is judged against: the file text with those
metadata assignments removed and, for the ``small`` preset, the size constants rewritten in place, so it stays
a normal runnable program. ``resize_source`` and ``size_constants`` are ``kernel_reward.screen.sizes``'s, re-exported: the
reward's shape-generalisation check rewrites sizes with the same code.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernel_reward.screen.sizes import assigned_name, parse, resize_source, size_constants

__all__ = [
    "METADATA_NAMES",
    "PRESETS",
    "Preset",
    "Task",
    "TaskFileError",
    "load_tasks",
    "resize_source",
    "size_constants",
    "task_names",
]

Preset = Literal["full", "small"]
PRESETS: tuple[str, ...] = ("full", "small")

# Module-level assignments that describe a task rather than belong to its program; stripped from Task.source.
METADATA_NAMES: tuple[str, ...] = ("SMALL", "CATEGORY", "LEVEL", "OPS")

_TASKS_DIR = Path(__file__).resolve().parent
_DEFAULT_LEVEL = "1"


@dataclass(frozen=True)
class Task:
    """One shipped task at one size preset.

    Attributes:
        name: the file stem, e.g. ``"elementwise_gelu_scale"``; unique within the set.
        category: coarse family (``"elementwise"``, ``"norm"``, ``"matmul"``...), from ``CATEGORY`` or, when
            absent, the part of the name before the first underscore.
        level: ``"1"`` for a single op, ``"2"`` for a fused chain (a string, like upstream ``extra_info.level``).
        ops: the torch ops the reference uses (may be empty).
        source: the complete reference program for ``preset``.
        preset: which size preset ``source`` carries.
    """

    name: str
    category: str
    level: str
    ops: tuple[str, ...]
    source: str
    preset: str = "full"


class TaskFileError(ValueError):
    """A task file breaks the conventions above (names the file and what is wrong)."""


def task_names() -> list[str]:
    """Names of all shipped tasks, sorted."""
    return sorted(_task_files())


def load_tasks(preset: Preset = "full", names: Iterable[str] | None = None) -> list[Task]:
    """Load shipped tasks at a size preset, sorted by name.

    Args:
        preset: ``"full"`` (realistic GPU sizes) or ``"small"`` (the ``SMALL`` sizes of each file).
        names: only these tasks (any order, duplicates ignored); ``None`` loads all.

    Raises:
        ValueError: unknown preset, or unknown task names (all of them are listed).
        TaskFileError: a task file is malformed (e.g. ``SMALL`` names a constant the file lacks).
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; expected one of {list(PRESETS)}")
    files = _task_files()
    if names is None:
        wanted = sorted(files)
    else:
        if isinstance(names, str):
            raise TypeError("names must be an iterable of task names, not a single string")
        wanted = sorted(set(names))
        unknown = [n for n in wanted if n not in files]
        if unknown:
            raise ValueError(f"unknown task name(s) {unknown}; known tasks: {sorted(files)}")
    return [_load_task(files[name], preset) for name in wanted]


# ----------------------------------------------------------------------------------------------------------
# Internals


@functools.cache
def _task_files() -> dict[str, Path]:
    return {p.stem: p for p in _TASKS_DIR.glob("*.py") if not p.stem.startswith("_")}


def _literal(stmt: ast.stmt, path: Path, name: str) -> object:
    try:
        return ast.literal_eval(stmt.value)
    except ValueError as exc:
        raise TaskFileError(f"{path.name}: {name} must be a plain literal ({exc})") from exc


def _load_task(path: Path, preset: str) -> Task:
    text = path.read_text(encoding="utf-8")
    try:
        tree = parse(text, path.name)
    except ValueError as exc:
        raise TaskFileError(str(exc)) from exc
    meta: dict[str, object] = {}
    meta_lines: set[int] = set()
    for stmt in tree.body:
        name = assigned_name(stmt)
        if name in METADATA_NAMES:
            meta[name] = _literal(stmt, path, name)
            meta_lines.update(range(stmt.lineno, stmt.end_lineno + 1))

    category = meta.get("CATEGORY", path.stem.split("_", 1)[0])
    level = meta.get("LEVEL", _DEFAULT_LEVEL)
    ops = meta.get("OPS", [])
    small = meta.get("SMALL")
    if not isinstance(category, str) or not category:
        raise TaskFileError(f"{path.name}: CATEGORY must be a non-empty string, got {category!r}")
    if level not in ("1", "2", "3"):
        raise TaskFileError(f"{path.name}: LEVEL must be '1', '2' or '3', got {level!r}")
    if not isinstance(ops, list | tuple) or not all(isinstance(o, str) for o in ops):
        raise TaskFileError(f"{path.name}: OPS must be a list of strings, got {ops!r}")
    if small is None:
        raise TaskFileError(f"{path.name}: missing SMALL = {{...}} (the sizes of the 'small' preset)")
    if not isinstance(small, dict) or not small:
        raise TaskFileError(
            f"{path.name}: SMALL must be a non-empty dict of constant name -> int, got {small!r}"
        )

    # Drop the metadata statements (whole lines) and collapse the blank run they leave behind.
    kept = [line for i, line in enumerate(text.splitlines(keepends=True), start=1) if i not in meta_lines]
    source = _collapse_blank_lines("".join(kept))
    try:  # validated for both presets, so a bad SMALL fails loudly whichever preset is loaded
        small_source = resize_source(source, small)
    except (KeyError, TypeError, ValueError) as exc:
        raise TaskFileError(f"{path.name}: SMALL does not fit the program: {exc}") from exc
    if preset == "small":
        source = small_source
    return Task(name=path.stem, category=category, level=level, ops=tuple(ops), source=source, preset=preset)


def _collapse_blank_lines(text: str) -> str:
    """At most two consecutive blank lines (PEP 8 spacing), one trailing newline."""
    out: list[str] = []
    blanks = 0
    for line in text.splitlines():
        blanks = blanks + 1 if not line.strip() else 0
        if blanks <= 2:
            out.append(line)
    return "\n".join(out).rstrip("\n") + "\n"
