"""The training curves of the pre-registered experiment's runs (docs/training/protocol/PROTOCOL.md), all runs in
one figure, each arm in its own colour: the probe's correct rate (every 2 steps), the batch's reward, compile rate
and share of tied groups (no learning signal) per step, and each run's step time split. Writes OUT.png and OUT.json
(the plotted series) and prints the time split per run.

    python tools/protocol_curves.py --out docs/training/protocol/curves \\
        --run trloo 0 RUN/rl_trloo_0_log_history.json --run control 0 RUN2/rl_control_0_log_history.json
    python tools/protocol_curves.py --out docs/training/protocol/curves --runs docs/training/protocol/runs

Each LOG_HISTORY is a run's ``log_history.json`` (``tools/gpu_learning_run.sh rl``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the learning run report's helpers

from learning_run_report import steps_of  # noqa: E402
from protocol_runs import add_runs_option, runs_from_option  # noqa: E402

ARM_COLOURS = {"trloo": "tab:blue", "control": "tab:orange"}
PROBE = "eval_turn_1/correct"
REWARD = "turn_1/reward"
COMPILED = "turn_1/compiled"
TIED = "filters/tied_group_frac"
TIME_SPLIT = ("time/generation_s", "time/environment_s", "time/optimization_s")
PARTS = tuple(key.split("/")[1] for key in TIME_SPLIT)
PART_COLOURS = ("tab:gray", "tab:green", "tab:purple")  # apart from the arms' colours


@dataclass(frozen=True)
class RunCurves:
    """One run's plotted series: (step, value) lists, and the mean seconds per step of each part of a step."""

    arm: str
    seed: int
    probe: list[tuple[int, float]]
    reward: list[tuple[int, float]]
    compiled: list[tuple[int, float]]
    tied_groups: list[tuple[int, float]]
    mean_step_seconds: dict[str, float]


def run_curves(arm: str, seed: int, history: list[dict]) -> RunCurves:
    """Pure: a run's series from its log history.

    Raises:
        ValueError: an arm the protocol does not have, or a history without a training step.
    """
    if arm not in ARM_COLOURS:
        raise ValueError(f"unknown arm {arm!r}; the protocol's arms are {sorted(ARM_COLOURS)}")

    def series(key: str) -> list[tuple[int, float]]:
        return list(zip(*steps_of(history, key), strict=True))

    reward = series(REWARD)
    if not reward:
        raise ValueError(f"{arm} seed {seed}: the log history has no training step ({REWARD})")
    split = {}
    for key, part in zip(TIME_SPLIT, PARTS, strict=True):
        values = [value for _, value in series(key)]
        if values:
            split[part] = statistics.fmean(values)
    return RunCurves(arm, seed, series(PROBE), reward, series(COMPILED), series(TIED), split)


def plot(runs: list[RunCurves], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 5, figsize=(23, 4))
    panels = (
        ("probe: correct rate (16 test tasks x 4)", "probe"),
        ("batch: mean reward (8 prompts x 8)", "reward"),
        ("batch: compile rate", "compiled"),
        ("batch: share of tied groups", "tied_groups"),
    )
    for axis, (title, field) in zip(axes, panels, strict=False):
        for run in runs:
            points = getattr(run, field)
            if points:
                steps, values = zip(*points, strict=True)
                axis.plot(
                    steps, values, "-o", ms=3, color=ARM_COLOURS[run.arm], label=f"{run.arm} {run.seed}"
                )
        axis.set(title=title, xlabel="optimizer step")
        axis.legend(fontsize=8)
    names = [f"{run.arm} {run.seed}" for run in runs]
    bottom = [0.0] * len(runs)
    for part, colour in zip(PARTS, PART_COLOURS, strict=True):
        heights = [run.mean_step_seconds.get(part, 0.0) for run in runs]
        axes[4].bar(names, heights, bottom=bottom, color=colour, label=part.removesuffix("_s"))
        bottom = [a + b for a, b in zip(bottom, heights, strict=True)]
    axes[4].set(title="mean step time split", ylabel="seconds")
    axes[4].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--run",
        nargs=3,
        action="append",
        metavar=("ARM", "SEED", "LOG_HISTORY"),
        help="one run's arm (trloo or control), seed and log_history.json",
    )
    add_runs_option(source)
    parser.add_argument("--out", type=Path, required=True, help="writes OUT.png and OUT.json")
    args = parser.parse_args(argv)
    listed = args.run
    if args.runs is not None:
        listed = [(r.arm, r.seed, r.log_history) for r in runs_from_option(parser, args.runs)]
    runs = []
    for arm, seed, path in listed:
        try:
            runs.append(run_curves(arm, int(seed), json.loads(Path(path).read_text())))
        except (OSError, ValueError) as exc:
            parser.error(f"{path}: {exc}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    plot(runs, args.out)
    args.out.with_suffix(".json").write_text(json.dumps([asdict(run) for run in runs], indent=1) + "\n")
    print("run | " + " | ".join(f"mean {part} per step" for part in PARTS))
    for run in runs:
        cells = [f"{run.mean_step_seconds.get(part, float('nan')):.1f}" for part in PARTS]
        print(f"{run.arm} {run.seed} | " + " | ".join(cells))
    print(f"wrote {args.out.with_suffix('.png')} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
