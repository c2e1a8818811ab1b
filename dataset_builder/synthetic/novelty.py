"""How far a task's honest answer is from answers a model was trained on: the lines that differ from the nearest one.

A held-out gain means little when every held-out answer is a one-line edit of a training answer; a test set built
for a learning experiment reports, per task, how many lines separate its answer from the closest training answer
(``nearest_answer``). Pure functions over program text.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass


def _lines(program: str) -> list[str]:
    """Non-blank lines with their trailing spaces stripped (indentation kept: it is Python's syntax)."""
    return [line.rstrip() for line in program.splitlines() if line.strip()]


def line_distance(a: str, b: str) -> int:
    """Lines to change to turn one program into the other: the larger of the lines only ``a`` has and the lines
    only ``b`` has (a replaced line counts once), blank lines and trailing spaces ignored."""
    removed = added = 0
    for line in difflib.ndiff(_lines(a), _lines(b)):
        removed += line.startswith("- ")
        added += line.startswith("+ ")
    return max(removed, added)


@dataclass(frozen=True)
class Nearest:
    """The closest of a set of answers: its name and the line distance to it."""

    name: str
    distance: int


def nearest_answer(program: str, answers: Mapping[str, str]) -> Nearest:
    """The answer among ``answers`` (name -> program) with the fewest differing lines (ties: the first name in
    sorted order).

    Raises:
        ValueError: ``answers`` is empty.
    """
    if not answers:
        raise ValueError("nearest_answer needs at least one answer to compare with")
    return min(
        (Nearest(name, line_distance(program, other)) for name, other in sorted(answers.items())),
        key=lambda nearest: nearest.distance,
    )
