"""Saved completions (``scripts/evaluate.py --completions``): a JSONL format, read strictly and written back.

One line per sample turn::

    {"uuid": "<extra_info.uuid of the task>", "sample": 0, "turn": 1, "completion": "..."}

``sample`` is a 0-based (or any non-negative) integer naming the trajectory within its task; ``turn`` is 1-based.
Every problem is reported with its line number: bad JSON, a missing or mistyped key, a duplicate
(uuid, sample, turn), or a trajectory whose turns are not 1..T without gaps. Blank lines are allowed. Extra keys
are kept out of the evaluation but logged once, so nothing disappears silently.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

REQUIRED_KEYS = ("uuid", "sample", "turn", "completion")


class CompletionsError(ValueError):
    """A saved-completions file that cannot be evaluated as written."""


@dataclass(frozen=True)
class SavedTrajectory:
    """The completions of one sample of one task, in turn order."""

    uuid: str
    sample: int
    completions: tuple[str, ...]  # completions[t - 1] is turn t


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_line(text: str, where: str) -> tuple[str, int, int, str]:
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CompletionsError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise CompletionsError(f"{where}: expected a JSON object, got {type(record).__name__}")
    missing = [key for key in REQUIRED_KEYS if key not in record]
    if missing:
        raise CompletionsError(f"{where}: missing key(s) {missing}; each line needs {list(REQUIRED_KEYS)}")
    uuid, sample, turn, completion = (record[key] for key in REQUIRED_KEYS)
    if not isinstance(uuid, str) or not uuid:
        raise CompletionsError(f"{where}: 'uuid' must be a non-empty string, got {uuid!r}")
    if not _is_int(sample) or sample < 0:
        raise CompletionsError(f"{where}: 'sample' must be a non-negative integer, got {sample!r}")
    if not _is_int(turn) or turn < 1:
        raise CompletionsError(f"{where}: 'turn' must be an integer >= 1 (turns are 1-based), got {turn!r}")
    if not isinstance(completion, str):
        raise CompletionsError(f"{where}: 'completion' must be a string, got {type(completion).__name__}")
    return uuid, sample, turn, completion


def parse_completions(lines: Iterable[str], source: str = "<completions>") -> list[SavedTrajectory]:
    """Parse JSONL text lines into trajectories, sorted by (uuid, sample). Raises ``CompletionsError``."""
    turns: dict[tuple[str, int], dict[int, tuple[str, int]]] = {}
    extra_keys: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text:
            continue
        where = f"{source}:{number}"
        uuid, sample, turn, completion = _parse_line(text, where)
        extra_keys.update(set(json.loads(text)) - set(REQUIRED_KEYS))
        seen = turns.setdefault((uuid, sample), {})
        if turn in seen:
            raise CompletionsError(
                f"{where}: duplicate (uuid={uuid!r}, sample={sample}, turn={turn}); first seen on line {seen[turn][1]}"
            )
        seen[turn] = (completion, number)
    if not turns:
        raise CompletionsError(f"{source}: no completions (the file is empty)")
    if extra_keys:
        logger.warning(
            "%s: ignoring extra key(s) %s (only %s are used)", source, sorted(extra_keys), REQUIRED_KEYS
        )
    trajectories = []
    for (uuid, sample), by_turn in sorted(turns.items()):
        expected = list(range(1, max(by_turn) + 1))
        if sorted(by_turn) != expected:
            missing = sorted(set(expected) - set(by_turn))
            lines_seen = sorted(number for _, number in by_turn.values())
            raise CompletionsError(
                f"{source}: uuid={uuid!r} sample={sample} lacks turn(s) {missing} (turns must run 1..T without "
                f"gaps; its lines: {lines_seen})"
            )
        trajectories.append(SavedTrajectory(uuid, sample, tuple(by_turn[t][0] for t in expected)))
    return trajectories


def read_completions(path: str | Path) -> list[SavedTrajectory]:
    """Read a saved-completions JSONL file (see the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise CompletionsError(f"completions file not found: {path}")
    with path.open(encoding="utf-8") as handle:
        return parse_completions(handle, source=str(path))


def completion_lines(trajectories: Iterable[SavedTrajectory]) -> list[str]:
    """The JSONL lines (without newlines) of ``trajectories``, in the format ``read_completions`` reads."""
    return [
        json.dumps({"uuid": t.uuid, "sample": t.sample, "turn": turn, "completion": text})
        for t in trajectories
        for turn, text in enumerate(t.completions, start=1)
    ]


def write_completions(path: str | Path, trajectories: Iterable[SavedTrajectory]) -> None:
    """Write ``trajectories`` as saved-completions JSONL (round-trips through ``read_completions``)."""
    Path(path).write_text("".join(line + "\n" for line in completion_lines(trajectories)), encoding="utf-8")
