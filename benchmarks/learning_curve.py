"""Learning evidence on the toy multi-turn environment: TRLOO vs turn-level GRPO, or vs a control, on one budget.

The digit-guessing toy (trl_ext.env.DigitGuessEnvironment) hides a digit per task; a wrong turn's feedback
reveals it, so turn-2 reward can only rise if the policy learns to use the feedback. For each arm and seed, a
fresh tiny random model is trained for ``--steps`` steps; per-step per-turn rewards go to JSON and a PNG, and the
arms' paired difference over seeds (the mean of the last fifth of the steps, TRLOO minus the other arm, with a
bootstrap 95 % interval over seeds) closes the table. The ``control`` arm is TRLOO trained on rewards shuffled
within each group (``reward_control='permute_within_group'``): the same update sizes, no credit assignment. The
``trloo_mrs`` arm is TRLOO with MRS, compared with ``trloo``; ``--generation-autocast bfloat16`` gives the
rollouts their own numerics (bf16 sampling beside fp32 training), the mismatch MRS is for.

    python benchmarks/learning_curve.py --out runs/learning_curve --steps 150 --seeds 0 1
    python benchmarks/learning_curve.py --out runs/mrs --estimators trloo trloo_mrs --generation-autocast bfloat16
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

logger = logging.getLogger("learning_curve")


def run_one(estimator: str, seed: int, args: argparse.Namespace, workdir: Path) -> dict:
    from datasets import Dataset

    from trl_ext.config import MultiTurnKernelConfig
    from trl_ext.env import DigitGuessEnvironment, make_toy_tasks
    from trl_ext.tiny_model import build_model, build_tokenizer
    from trl_ext.trainer import TRLOOTrainer

    tokenizer = build_tokenizer()
    model = build_model(tokenizer, seed=seed)
    config = MultiTurnKernelConfig(
        output_dir=str(workdir / f"{estimator}_{seed}"),
        use_cpu=True,
        bf16=False,
        seed=seed,
        max_steps=args.steps,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=args.max_tokens,
        max_turns=args.turns,
        advantage_estimator="grpo_turn" if estimator == "grpo_turn" else "trloo",
        reward_control="permute_within_group" if estimator == "control" else "none",
        use_mrs=args.mrs or estimator == "trloo_mrs",
        generation_autocast=args.generation_autocast,
        generation_weights=args.generation_weights,
        top_k=0,
        top_p=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    trainer = TRLOOTrainer(
        model=model,
        environment=DigitGuessEnvironment(
            reward_from_turn=args.reward_from_turn,
            feedback_repeats=args.repeats,
            stop_on_success=args.stop_on_success,
        ),
        args=config,
        train_dataset=Dataset.from_list(make_toy_tasks(args.tasks, seed=seed, num_choices=args.choices)),
        processing_class=tokenizer,
    )
    started = time.perf_counter()
    trainer.train()
    rows = [h for h in trainer.state.log_history if "turn_1/reward" in h]
    return {
        "estimator": estimator,
        "advantage_estimator": config.advantage_estimator,
        "reward_control": config.reward_control,
        "seed": seed,
        "seconds": time.perf_counter() - started,
        "turn_1_reward": [h["turn_1/reward"] for h in rows],
        "turn_2_reward": [h.get("turn_2/reward", float("nan")) for h in rows],
        "turn_2_correct": [h.get("turn_2/correct", float("nan")) for h in rows],
        "solved": [solved_share(h, args.turns, args.stop_on_success) for h in rows],
        "mrs_rejected": [h.get("mrs/rejected_frac", float("nan")) for h in rows],
        "mrs_mean_abs_log_ratio": [h.get("mrs/mean_abs_log_ratio", float("nan")) for h in rows],
    }


def solved_share(log: dict, turns: int, stop_on_success: bool) -> float:
    """Share of trajectories correct at their final turn. With stop_on_success a correct turn ends the episode,
    so each trajectory is counted once by sum_t reached(t) * correct(t)."""
    if not stop_on_success:
        return log.get(f"turn_{turns}/correct", float("nan"))
    return sum(
        log.get(f"turn_{t}/reached_frac", 0.0) * log.get(f"turn_{t}/correct", 0.0)
        for t in range(1, turns + 1)
    )


def tail_mean(values: list[float]) -> float:
    """Mean of the last fifth of ``values`` (at least one), NaN entries left out."""
    tail = [v for v in values[-max(1, len(values) // 5) :] if not math.isnan(v)]
    return sum(tail) / len(tail) if tail else float("nan")


def paired_difference(
    runs: list[dict], key: str, other: str = "grpo_turn", resamples: int = 10_000, first: str = "trloo"
) -> dict | None:
    """``first`` (TRLOO) minus ``other`` in ``key``'s tail mean, over the seeds both arms ran: the mean difference
    and a percentile bootstrap 95 % interval over seeds (None with fewer than two paired seeds)."""
    import random

    by_seed: dict[int, dict[str, float]] = {}
    for run in runs:
        by_seed.setdefault(run["seed"], {})[run["estimator"]] = tail_mean(run[key])
    diffs = [v[first] - v[other] for v in by_seed.values() if {first, other} <= set(v)]
    if len(diffs) < 2:
        return None
    rng = random.Random(0)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(resamples))
    return {
        "seeds": len(diffs),
        "mean": sum(diffs) / len(diffs),
        "low": means[int(0.025 * resamples)],
        "high": means[int(0.975 * resamples) - 1],
        "trloo_higher": sum(d > 0 for d in diffs),  # seeds on which ``first`` is higher
    }


def smooth(values: list[float], window: int) -> list[float]:
    out = []
    for i in range(len(values)):
        chunk = [v for v in values[max(0, i - window + 1) : i + 1] if not math.isnan(v)]
        out.append(sum(chunk) / len(chunk) if chunk else float("nan"))
    return out


def plot(runs: list[dict], path: Path, window: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (
        ("turn_1_reward", "reward at turn 1"),
        ("turn_2_reward", "reward at turn 2 (after feedback)"),
        ("solved", "share of episodes solved"),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4), sharey=True)
    colors = {"trloo": "tab:blue", "grpo_turn": "tab:orange", "control": "tab:gray", "trloo_mrs": "tab:green"}
    styles = ["-", "--", ":", "-."]
    for ax, (key, title) in zip(axes, panels, strict=True):
        for run in runs:
            label = f"{run['estimator']} seed {run['seed']}"
            ax.plot(
                smooth(run[key], window),
                color=colors[run["estimator"]],
                linestyle=styles[run["seed"] % 4],
                alpha=0.85,
                label=label,
            )
        ax.set_title(f"{title} ({window}-step mean)", fontsize=10)
        ax.set_xlabel("training step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("toy digit guess")
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for curve.json and curve.png")
    parser.add_argument("--steps", type=int, default=150, help="training steps per run")
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[0], help="seeds (one run per estimator each)"
    )
    parser.add_argument(
        "--estimators",
        nargs="+",
        default=["trloo", "grpo_turn"],
        choices=["trloo", "grpo_turn", "control", "trloo_mrs"],
        help="arms: TRLOO, turn-level GRPO, TRLOO on group-shuffled rewards (control), TRLOO with MRS",
    )
    parser.add_argument("--prompts", type=int, default=4, help="prompts per step")
    parser.add_argument("--generations", type=int, default=4, help="samples per prompt")
    parser.add_argument("--tasks", type=int, default=64, help="toy tasks in the dataset")
    parser.add_argument("--choices", type=int, default=3, help="secrets are digits 0..choices-1")
    parser.add_argument("--reward-from-turn", type=int, default=1, help="turns before this one are unscored")
    parser.add_argument("--repeats", type=int, default=1, help="times the feedback repeats the secret")
    parser.add_argument("--turns", type=int, default=2, help="max turns per episode")
    parser.add_argument(
        "--stop-on-success", action="store_true", help="end an episode at its first correct turn"
    )
    parser.add_argument("--max-tokens", type=int, default=3, help="tokens per turn")
    parser.add_argument("--lr", type=float, default=3e-3, help="learning rate")
    parser.add_argument(
        "--mrs", action="store_true", help="every arm with mismatch rejection sampling (use_mrs)"
    )
    parser.add_argument(
        "--generation-autocast",
        choices=["none", "bfloat16"],
        default="none",
        help="sample the rollouts under autocast to this dtype (numerics unlike the fp32 trainer's)",
    )
    parser.add_argument(
        "--generation-weights",
        choices=["trainer", "bfloat16"],
        default="trainer",
        help="sample the rollouts from a copy of the model with bf16 weights (a larger mismatch than autocast's)",
    )
    parser.add_argument("--window", type=int, default=10, help="smoothing window of the plot (steps)")
    parser.add_argument(
        "--from-json",
        type=Path,
        nargs="+",
        default=None,
        help="do not train: merge the runs of these curve.json files into one table and plot",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for path in args.from_json or []:
        runs.extend(json.loads(path.read_text())["runs"])
    for seed in args.seeds if args.from_json is None else []:
        for estimator in args.estimators:
            run = run_one(estimator, seed, args, args.out / "work")
            runs.append(run)
            tail = max(1, args.steps // 5)
            logger.info(
                "%-9s seed %d: turn-2 reward first %d steps %.3f, last %d steps %.3f (%.0f s)",
                estimator,
                seed,
                tail,
                sum(run["turn_2_reward"][:tail]) / tail,
                tail,
                sum(run["turn_2_reward"][-tail:]) / tail,
                run["seconds"],
            )
    arms = {run["estimator"] for run in runs}
    # (label in curve.json, first arm, other arm): TRLOO against each other arm run, and MRS on against off
    comparisons = [(other, "trloo", other) for other in ("grpo_turn", "control") if other in arms]
    if {"trloo", "trloo_mrs"} <= arms:
        comparisons.append(("trloo_mrs_minus_trloo", "trloo_mrs", "trloo"))
    paired = {
        label: {key: paired_difference(runs, key, other, first=first) for key in ("turn_2_reward", "solved")}
        for label, first, other in comparisons
    }
    (args.out / "curve.json").write_text(
        json.dumps(
            {"config": {k: str(v) for k, v in vars(args).items()}, "runs": runs, "paired": paired}, indent=1
        )
    )
    plot(runs, args.out / "curve.png", args.window)
    print(
        f"{'estimator':<10} {'seed':>4} {'turn2 first':>11} {'turn2 last':>10} {'solved first':>12} {'solved last':>11}"
    )
    for run in runs:
        tail = max(1, len(run["turn_2_reward"]) // 5)

        def mean(xs):
            xs = [x for x in xs if not math.isnan(x)]
            return sum(xs) / len(xs) if xs else float("nan")

        print(
            f"{run['estimator']:<10} {run['seed']:>4} {mean(run['turn_2_reward'][:tail]):>11.3f} "
            f"{mean(run['turn_2_reward'][-tail:]):>10.3f} {mean(run['solved'][:tail]):>12.3f} "
            f"{mean(run['solved'][-tail:]):>11.3f}"
        )
    for label, first, other in comparisons:
        for key, diff in paired[label].items():
            if diff is not None:
                print(
                    f"{first} - {other}, {key} (last fifth), {diff['seeds']} seeds: {diff['mean']:+.3f} "
                    f"[{diff['low']:+.3f}, {diff['high']:+.3f}], {first} higher on {diff['trloo_higher']}"
                )
    rejected = [x for run in runs for x in run.get("mrs_rejected", []) if not math.isnan(x)]
    ratios = [x for run in runs for x in run.get("mrs_mean_abs_log_ratio", []) if not math.isnan(x)]
    if rejected:
        print(
            f"MRS rejected on average {sum(rejected) / len(rejected):.3f} of the trajectories a step; mean |log "
            f"trainer / rollout probability| {sum(ratios) / max(1, len(ratios)):.2e} a token"
        )
    print(f"wrote {args.out / 'curve.json'} and {args.out / 'curve.png'}")


if __name__ == "__main__":
    main()
