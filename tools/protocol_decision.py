"""The decision rule of the pre-registered learning experiment (docs/training/protocol/PROTOCOL.md), applied to
its evaluations: each run's gain on the test set over the SFT model of its own session (each session trains SFT
again), paired by task with a bootstrap interval, and the four criteria, each printed as met or not. Before both arms
have a run it reports the runs so far and decides nothing.

    python tools/protocol_decision.py --tasks TEST_SET --out docs/training/protocol/result \\
        --run trloo 0 RUN/summary.json SESSION_SFT/summary.json --run control 0 RUN/summary.json SFT/summary.json
    python tools/protocol_decision.py --tasks TEST_SET --runs docs/training/protocol/runs   # every finished run

Every summary is a ``scripts/evaluate.py`` summary of the same test tasks (``per_task`` correct rates).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without an install
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the run records' listing

from protocol_runs import ARMS, add_runs_option, runs_from_option  # noqa: E402

from kernel_eval.paired import PairedDifference, paired_difference  # noqa: E402

MIN_MEAN_GAIN = 0.05  # the mean TRLOO gain must reach this
CONTROL_BAND = 0.02  # the mean control gain must stay within +- this
MIN_COMPUTATIONS = 3  # computations on which TRLOO's mean gain beats the control's


@dataclass(frozen=True)
class Decision:
    """Each criterion of the rule, and whether learning is claimed (all four met)."""

    every_trloo_interval_above_zero: bool
    every_trloo_above_every_control: bool
    mean_trloo_gain: float
    mean_control_gain: float
    mean_gains_in_band: bool
    computations_won: list[str]
    spread_over_computations: bool

    @property
    def learning_claimed(self) -> bool:
        return (
            self.every_trloo_interval_above_zero
            and self.every_trloo_above_every_control
            and self.mean_gains_in_band
            and self.spread_over_computations
        )


def missing_arms(gains: dict[tuple[str, int], PairedDifference]) -> list[str]:
    """Pure: the protocol's arms without a run among ``gains`` (keys (arm, seed)), in the protocol's order."""
    return [arm for arm in ARMS if all(run_arm != arm for run_arm, _ in gains)]


def decide(
    gains: dict[tuple[str, int], PairedDifference], by_computation: dict[str, dict[str, float]]
) -> Decision:
    """Pure: the rule over each run's paired gain ((arm, seed) -> difference) and each arm's mean gain per
    computation (arm -> computation -> mean over its seeds and tasks).

    Raises:
        ValueError: an arm has no run, or an arm unknown to the protocol.
    """
    unknown = {arm for arm, _ in gains} - set(ARMS)
    if unknown:
        raise ValueError(f"unknown arms {sorted(unknown)}; the protocol's arms are {ARMS}")
    missing = missing_arms(gains)
    if missing:
        raise ValueError(f"the rule needs at least one run of each arm; {' and '.join(missing)} has none")
    trloo = [d for (arm, _), d in sorted(gains.items()) if arm == "trloo"]
    control = [d for (arm, _), d in sorted(gains.items()) if arm == "control"]
    mean_trloo = statistics.fmean(d.difference for d in trloo)
    mean_control = statistics.fmean(d.difference for d in control)
    won = sorted(
        name
        for name, gain in by_computation.get("trloo", {}).items()
        if gain > by_computation.get("control", {}).get(name, float("inf"))
    )
    return Decision(
        every_trloo_interval_above_zero=all(d.low > 0 for d in trloo),
        every_trloo_above_every_control=min(d.difference for d in trloo) > max(d.difference for d in control),
        mean_trloo_gain=mean_trloo,
        mean_control_gain=mean_control,
        mean_gains_in_band=mean_trloo >= MIN_MEAN_GAIN and abs(mean_control) <= CONTROL_BAND,
        computations_won=won,
        spread_over_computations=len(won) >= MIN_COMPUTATIONS,
    )


def correct_rates(summary_path: Path) -> dict[str, float]:
    """Per-task correct rates of a ``scripts/evaluate.py`` summary."""
    summary = json.loads(summary_path.read_text())
    return {task: row["correct_rate"] for task, row in summary["per_task"].items()}


def computation_of(tasks: Path) -> dict[str, str]:
    """Task uuid -> its computation (``family/variant``: the test set's novelty.json beside its ``test`` folder)."""
    novelty = json.loads((tasks / "novelty.json").read_text())
    return {row["uuid"]: row["computation"] for row in novelty}


def print_tables(
    gains: dict[tuple[str, int], PairedDifference],
    by_computation: dict[str, dict[str, float]],
    computations: list[str],
) -> None:
    print("arm | seed | SFT correct | RL correct | gain | 95 % interval")
    for (arm, seed), d in sorted(gains.items()):
        print(
            f"{arm} | {seed} | {d.mean_a:.3f} | {d.mean_b:.3f} | {d.difference:+.3f} | [{d.low:+.3f}, {d.high:+.3f}]"
        )
    print("\ncomputation | " + " | ".join(f"{arm} mean gain" for arm in ARMS))
    for name in computations:
        cells = [
            f"{by_computation[arm][name]:+.3f}" if name in by_computation.get(arm, {}) else "-"
            for arm in ARMS
        ]
        print(f"{name} | " + " | ".join(cells))


def print_criteria(decision: Decision) -> None:
    print("\ncriterion | met")
    print(f"every TRLOO seed's interval excludes 0 | {decision.every_trloo_interval_above_zero}")
    print(f"every TRLOO gain exceeds every control gain | {decision.every_trloo_above_every_control}")
    print(
        f"mean TRLOO gain {decision.mean_trloo_gain:+.3f} >= {MIN_MEAN_GAIN}, mean control gain "
        f"{decision.mean_control_gain:+.3f} within +-{CONTROL_BAND} | {decision.mean_gains_in_band}"
    )
    print(
        f"TRLOO beats the control on >= {MIN_COMPUTATIONS} computations ({', '.join(decision.computations_won) or 'none'}) "
        f"| {decision.spread_over_computations}"
    )
    print(f"\nlearning claimed: {decision.learning_claimed}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=Path, required=True, help="the test set folder (with novelty.json)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--run",
        nargs=4,
        action="append",
        metavar=("ARM", "SEED", "SUMMARY", "SFT_SUMMARY"),
        help="one RL run's test-set summary.json and its session's SFT one (ARM: trloo or control)",
    )
    add_runs_option(source)
    parser.add_argument("--out", type=Path, default=None, help="write decision.json here")
    args = parser.parse_args(argv)

    runs = args.run
    if args.runs is not None:
        runs = [(r.arm, r.seed, r.summary, r.sft_summary) for r in runs_from_option(parser, args.runs)]
    computation = computation_of(args.tasks)
    gains: dict[tuple[str, int], PairedDifference] = {}
    per_task_gain: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for arm, seed, path, sft_path in runs:
        before, after = correct_rates(Path(sft_path)), correct_rates(Path(path))
        if set(before) != set(after):
            parser.error(f"{path} and {sft_path} evaluate different tasks")
        gains[arm, int(seed)] = paired_difference(before, after, metric=f"{arm} seed {seed} correct_rate")
        for task, rate in after.items():
            per_task_gain[arm][computation[task]].append(rate - before[task])
    by_computation = {
        arm: {name: statistics.fmean(values) for name, values in table.items()}
        for arm, table in per_task_gain.items()
    }
    missing = missing_arms(gains)
    decision = None if missing else decide(gains, by_computation)
    print_tables(gains, by_computation, sorted(set(computation.values())))
    if decision is None:
        print(f"\nno decision: the {' and '.join(missing)} arm has no run yet")
    else:
        print_criteria(decision)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        record = {
            "decision": None
            if decision is None
            else {**asdict(decision), "learning_claimed": decision.learning_claimed},
            "missing_arms": missing,
            "gains": {f"{arm}/{seed}": d.to_dict() for (arm, seed), d in sorted(gains.items())},
            "by_computation": by_computation,
        }
        (args.out / "decision.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
