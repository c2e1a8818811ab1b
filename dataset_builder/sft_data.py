"""Cold-start SFT trajectories from synthetic tasks, every answer verified by the real kernel reward.

Two kinds of trajectory, in the chat ``messages`` format TRL's ``SFTTrainer`` reads:

- ``single_turn``: the first-turn prompt (``dataset_builder.prompt``) -> the honest answer;
- ``multi_turn``: the prompt -> the flawed answer -> the environment's feedback turn for that answer
  (``kernel_reward.env.feedback_turn`` of its real ``EvalResult``, the text RL rollouts show) -> the corrected
  honest answer.

Nothing is kept on trust: each task's honest and flawed answers go through ``kernel_reward.Evaluator`` (one
``evaluate_many``, a warm worker pool). A task whose honest answer is not ``correct`` yields nothing; a flawed
answer that passes, is judged a hack, or whose evaluation failed for the evaluator's own reasons (crash,
timeout) drops the multi-turn trajectory. Every drop is counted by reason in ``BuildReport`` and listed.

    python -m dataset_builder.sft_data --count 200 --out runs/sft-data
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from dataset_builder.synthetic.generate import generate_tasks
from dataset_builder.synthetic.split import DEFAULT_HELD_OUT, split_tasks
from dataset_builder.synthetic.task import FAMILIES, SyntheticTask

log = logging.getLogger(__name__)

Kind = Literal["single_turn", "multi_turn"]
KINDS: tuple[str, ...] = ("single_turn", "multi_turn")
# A flawed answer is a useful first turn only when the judge ran it and found it wrong for the answer's own
# reasons; "hacked", "crashed", "timeout" or "correct" verdicts drop the multi-turn trajectory.
FLAWED_KEPT_STATUSES = frozenset({"incorrect", "runtime_error", "compile_error"})
_STATUS_LEAD = {
    "incorrect": "The server reports that my output does not match the reference.",
    "runtime_error": "The server reports that my kernel failed at run time.",
    "compile_error": "The server reports that my code did not compile.",
}

EvaluateMany = Callable[[list[tuple[str, str]]], list[Any]]  # (reference, completion) pairs -> EvalResults


@dataclass(frozen=True)
class Trajectory:
    """One SFT example: ``messages`` plus where it came from."""

    uuid: str  # the task's uuid
    family: str
    variant: str
    split: str  # "train" or "held_out"
    kind: str  # "single_turn" or "multi_turn"
    messages: list[dict[str, str]]
    flawed_status: str | None = None  # the judge's verdict on the flawed turn (multi-turn only)

    def to_row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Drop:
    uuid: str
    kind: str
    reason: str
    detail: str


@dataclass
class BuildReport:
    """What was verified, kept and dropped (every drop named)."""

    tasks: int = 0
    kept: Counter = field(default_factory=Counter)  # kind -> count
    dropped: Counter = field(default_factory=Counter)  # reason -> count
    drops: list[Drop] = field(default_factory=list)
    evaluations: int = 0
    seconds: float = 0.0

    def drop(self, uuid: str, kind: str, reason: str, detail: str) -> None:
        self.dropped[reason] += 1
        self.drops.append(Drop(uuid, kind, reason, detail[:300]))

    def to_dict(self) -> dict[str, Any]:
        return {
            "tasks": self.tasks,
            "kept": dict(self.kept),
            "dropped": dict(self.dropped),
            "evaluations": self.evaluations,
            "seconds": round(self.seconds, 2),
            "drops": [asdict(d) for d in self.drops],
        }

    def summary(self) -> str:
        kept = ", ".join(f"{k} {v}" for k, v in sorted(self.kept.items())) or "none"
        dropped = ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items())) or "none"
        return (
            f"{self.tasks} tasks, {self.evaluations} evaluations in {self.seconds:.1f} s; kept: {kept}; "
            f"dropped: {dropped}"
        )


def completion(text: str, code: str) -> str:
    """An assistant answer: a short explanation, then the program in one fenced python block."""
    return f"{text}\n\n```python\n{code.rstrip()}\n```"


def trajectories_for(
    task: SyntheticTask,
    honest: Any,
    flawed: Any,
    split: str,
    kinds: Sequence[str],
    report: BuildReport,
    template_path: str | None = None,
) -> list[Trajectory]:
    """The trajectories of one task given the judge's verdicts on its honest and flawed answers (pure but for
    the report, which counts what is kept and dropped)."""
    from dataset_builder.prompt import first_turn_messages
    from kernel_reward.env import feedback_turn

    out: list[Trajectory] = []
    if honest.status.value != "correct":
        for kind in kinds:
            report.drop(task.uuid, kind, f"honest_{honest.status.value}", honest.error or "")
        return out
    prompt = first_turn_messages(task.reference, template_path)
    answer = completion(task.plan, task.solution)
    if "single_turn" in kinds:
        out.append(
            Trajectory(
                task.uuid,
                task.family,
                task.variant,
                split,
                "single_turn",
                prompt + [{"role": "assistant", "content": answer}],
            )
        )
        report.kept["single_turn"] += 1
    if "multi_turn" in kinds:
        status = flawed.status.value
        if status not in FLAWED_KEPT_STATUSES:
            report.drop(task.uuid, "multi_turn", f"flawed_{status}", flawed.error or task.flaw)
        else:
            corrected = completion(f"{_STATUS_LEAD[status]} {task.flaw}", task.solution)
            messages = prompt + [
                {"role": "assistant", "content": completion(task.plan, task.flawed)},
                {"role": "user", "content": feedback_turn(flawed)},
                {"role": "assistant", "content": corrected},
            ]
            out.append(
                Trajectory(task.uuid, task.family, task.variant, split, "multi_turn", messages, status)
            )
            report.kept["multi_turn"] += 1
    return out


def build_trajectories(
    tasks: Sequence[SyntheticTask],
    evaluate_many: EvaluateMany,
    *,
    held_out: Sequence[str] = DEFAULT_HELD_OUT,
    kinds: Sequence[str] = KINDS,
    template_path: str | None = None,
) -> tuple[list[Trajectory], BuildReport]:
    """Verify every task's answers with ``evaluate_many`` (one call) and build its trajectories.

    Args:
        tasks: synthetic tasks (``dataset_builder.synthetic.generate.generate_tasks``).
        evaluate_many: judges ``(reference, completion)`` pairs in order, e.g. ``Evaluator.evaluate_many``.
        held_out: split names (see ``synthetic.split_tasks``); each trajectory records its task's side.
        kinds: which trajectory kinds to build.
    """
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"kinds must be a non-empty subset of {list(KINDS)}, got {list(kinds)}")
    held = {t.uuid for t in split_tasks(tasks, held_out).held_out}
    report = BuildReport(tasks=len(tasks))
    start = time.monotonic()
    pairs: list[tuple[str, str]] = []
    for task in tasks:
        pairs.append((task.reference, completion(task.plan, task.solution)))
        pairs.append((task.reference, completion(task.plan, task.flawed)))
    results = evaluate_many(pairs)
    if len(results) != len(pairs):
        raise RuntimeError(f"evaluate_many returned {len(results)} results for {len(pairs)} pairs")
    report.evaluations = len(pairs)
    trajectories: list[Trajectory] = []
    for i, task in enumerate(tasks):
        split = "held_out" if task.uuid in held else "train"
        trajectories += trajectories_for(
            task, results[2 * i], results[2 * i + 1], split, kinds, report, template_path
        )
    report.seconds = time.monotonic() - start
    return trajectories, report


def to_dataset(trajectories: Sequence[Trajectory]):
    """A ``datasets.Dataset`` with a ``messages`` column (what ``SFTTrainer`` reads) and provenance columns."""
    from datasets import Dataset

    return Dataset.from_list([t.to_row() for t in trajectories])


def write_jsonl(trajectories: Sequence[Trajectory], path: str | Path) -> Path:
    """One JSON object per line (``datasets.load_dataset("json", data_files=path)`` reads it back)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for trajectory in trajectories:
            handle.write(json.dumps(trajectory.to_row(), ensure_ascii=False) + "\n")
    return path


# ------------------------------------------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m dataset_builder.sft_data",
        description="Build verified cold-start SFT trajectories (single-turn and multi-turn with real feedback) "
        "from synthetic kernel tasks. Writes OUT/train.jsonl, OUT/held_out.jsonl and OUT/report.json; "
        "prints kept and dropped counts per reason.",
    )
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--count", type=int, default=100, help="synthetic tasks to generate (default 100)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    parser.add_argument(
        "--families",
        nargs="+",
        default=list(FAMILIES),
        choices=FAMILIES,
        help="families to generate, taken in turn (default: all)",
    )
    parser.add_argument(
        "--held-out",
        nargs="*",
        default=list(DEFAULT_HELD_OUT),
        help="held-out split names, 'family' or 'family/variant' (default: %(default)s)",
    )
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS, help="trajectory kinds")
    parser.add_argument("--device", default="cpu", help="evaluation device: cpu (Triton interpreter) or cuda")
    parser.add_argument(
        "--workers", type=int, default=2, help="evaluator worker processes per device (default 2)"
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per evaluation (default 120)")
    parser.add_argument(
        "--eval-seed",
        type=int,
        default=0,
        help="base of the judge's trial seeds, for reproducible feedback text (default 0)",
    )
    parser.add_argument(
        "--prompt-template", default=None, help="first-turn template file (default: shipped v1)"
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from kernel_reward import Evaluator

    try:
        tasks = generate_tasks(args.count, seed=args.seed, families=args.families)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with Evaluator(
        device=args.device, workers=args.workers, timeout=args.timeout, seed_base=args.eval_seed
    ) as ev:
        trajectories, report = build_trajectories(
            tasks,
            lambda pairs: ev.evaluate_many(pairs, progress=True),
            held_out=args.held_out,
            kinds=args.kinds,
            template_path=args.prompt_template,
        )
    out = Path(args.out)
    for split in ("train", "held_out"):
        path = write_jsonl([t for t in trajectories if t.split == split], out / f"{split}.jsonl")
        log.info("wrote %s (%d trajectories)", path, sum(t.split == split for t in trajectories))
    (out / "report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    print(report.summary())
    for drop in report.drops:
        print(f"  dropped {drop.uuid} {drop.kind}: {drop.reason}: {drop.detail[:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
