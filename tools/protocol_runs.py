"""The pre-registered experiment's run records as the sessions leave them (docs/training/protocol/runs/): each
session's folder holds ``sft/eval_sft/summary.json`` (its SFT model on the test set) and, for a run of ARM with
SEED, ``run_ARM_SEED/`` with ``rl_ARM_SEED_log_history.json`` and ``eval_rl_ARM_SEED/summary.json``.
``find_runs`` lists every finished run with its session's SFT evaluation for ``protocol_decision.py`` and
``protocol_curves.py`` (``--runs DIR``), and names the incomplete ones it leaves out.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

ARMS = ("trloo", "control")
RUN_FOLDER = re.compile(r"^run_(?P<arm>[a-z]+)_(?P<seed>\d+)$")


@dataclass(frozen=True)
class RunRecord:
    """One run's files: its folder, its test-set summary, its session's SFT summary and its log history."""

    arm: str
    seed: int
    folder: Path
    summary: Path
    sft_summary: Path
    log_history: Path


def find_runs(runs_dir: Path) -> tuple[list[RunRecord], list[tuple[Path, str]]]:
    """Every finished run under ``runs_dir`` (``trloo`` first, then by seed), and the run folders left out with why.

    Raises:
        ValueError: no such folder, an arm the protocol does not have, or one run recorded twice (which of two
            records counts is a decision for PROTOCOL.md, not for this listing).
    """
    if not runs_dir.is_dir():
        raise ValueError(f"{runs_dir}: no such folder")
    found: dict[tuple[str, int], RunRecord] = {}
    skipped: list[tuple[Path, str]] = []
    for folder in sorted(runs_dir.glob("*/run_*")):
        match = RUN_FOLDER.match(folder.name)
        if match is None or not folder.is_dir():
            continue
        arm, seed = match["arm"], int(match["seed"])
        if arm not in ARMS:
            raise ValueError(f"{folder}: unknown arm {arm!r}; the protocol's arms are {list(ARMS)}")
        record = RunRecord(
            arm,
            seed,
            folder,
            folder / f"eval_rl_{arm}_{seed}" / "summary.json",
            folder.parent / "sft" / "eval_sft" / "summary.json",
            folder / f"rl_{arm}_{seed}_log_history.json",
        )
        if not record.summary.is_file():
            skipped.append((folder, "no test-set summary"))
            continue
        if not record.sft_summary.is_file():
            skipped.append((folder, "no SFT summary in its session"))
            continue
        if (arm, seed) in found:
            raise ValueError(f"{arm} seed {seed} is recorded twice: {found[arm, seed].folder} and {folder}")
        found[arm, seed] = record
    return [found[key] for key in sorted(found, key=lambda key: (ARMS.index(key[0]), key[1]))], skipped


def add_runs_option(source: argparse._MutuallyExclusiveGroup) -> None:
    """``--runs DIR`` beside a command's own ``--run`` (one of the two)."""
    source.add_argument(
        "--runs", type=Path, help="every finished run recorded under this folder (tools/protocol_runs.py)"
    )


def runs_from_option(parser: argparse.ArgumentParser, runs_dir: Path) -> list[RunRecord]:
    """``find_runs`` for a command: the runs left out printed with why, a refused folder the parser's error."""
    try:
        found, skipped = find_runs(runs_dir)
    except ValueError as exc:
        parser.error(str(exc))
    for folder, why in skipped:
        print(f"left out: {folder} ({why})")
    return found
