"""Report of a GPU learning run (tools/gpu_learning_run.sh): the held-out evaluations (before SFT when it was run,
after SFT, after RL), each compared with the previous one task by task with a paired 95 % bootstrap interval, and
the training curves as plots.

    python tools/learning_run_report.py --runs DIR_SFT DIR_POOL DIR_RL DIR_EVAL --out docs/training/gpu_learning_run \\
        [--tasks runs/learn_data/sft_data/heldout_tasks]

Each DIR is what one device call wrote under $OUT (the files are looked up in all of them): eval_sft/summary.json,
sft_log_history.json, rl_log_history.json, eval_rl/summary.json, and eval_base/summary.json if present. With
--tasks, the correct rates are also broken down by held-out computation. Writes OUT/report.md,
OUT/learning_run.json and OUT/*.png; prints the report.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernel_eval.paired import paired_summary_differences  # noqa: E402
from kernel_eval.report import format_value as fmt  # noqa: E402

RATES = ("format_rate", "compile_rate", "correct_rate", "hacked_rate")
RL_CURVES = ("turn_1/reward", "turn_1/correct", "turn_1/hacked", "turn_1/fast_1")
TIME_SPLIT = ("time/generation_s", "time/environment_s", "time/optimization_s")


def find(runs: list[Path], name: str) -> Path:
    for run in runs:
        if (run / name).is_file():
            return run / name
    raise FileNotFoundError(f"{name} is in none of {[str(r) for r in runs]}")


def steps_of(history: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    rows = [(e["step"], e[key]) for e in history if key in e and e[key] is not None]
    return [s for s, _ in rows], [float(v) for _, v in rows]


def plot_curves(sft_log: list[dict], rl_log: list[dict], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    steps, loss = steps_of(sft_log, "loss")
    axes[0].plot(steps, loss, "-o", ms=3)
    axes[0].set(title="SFT: training loss", xlabel="optimizer step", ylabel="loss")
    for key in RL_CURVES:
        s, v = steps_of(rl_log, key)
        if s:
            axes[1].plot(s, v, "-o", ms=3, label=key.split("/")[1])
    axes[1].set(
        title="TRLOO: per-step rollout metrics (64 samples)", xlabel="optimizer step", ylim=(-0.05, None)
    )
    axes[1].legend()
    bottom = None
    for key in TIME_SPLIT:
        s, v = steps_of(rl_log, key)
        if s:
            axes[2].bar(s, v, bottom=bottom, label=key.split("/")[1])
            bottom = v if bottom is None else [a + b for a, b in zip(bottom, v, strict=True)]
    axes[2].set(title="TRLOO: step time split", xlabel="optimizer step", ylabel="seconds")
    axes[2].legend()
    fig.tight_layout()
    fig.savefig(out / "curves.png", dpi=110)
    plt.close(fig)
    return ["curves.png"]


STAGES = (("before SFT", "eval_base"), ("after SFT", "eval_sft"), ("after RL", "eval_rl"))


def load_evaluations(runs: list[Path]) -> dict[str, dict[str, Any]]:
    """The held-out summaries found, by stage label; after SFT and after RL are required, before SFT is optional."""
    found = {}
    for label, folder in STAGES:
        try:
            found[label] = json.loads(find(runs, f"{folder}/summary.json").read_text())
        except FileNotFoundError:
            if folder != "eval_base":
                raise
    return found


def rates_by_computation(evaluations: dict[str, dict[str, Any]], tasks: Path) -> tuple[list[str], list[str]]:
    """Markdown rows: each held-out computation's mean per-task correct rate at each stage (the tasks' ``ops``)."""
    from datasets import load_dataset

    computation = {
        row["uuid"]: " + ".join(op.split(".")[-1] for op in row["ops"])
        for row in load_dataset(str(tasks))["train"]["extra_info"]
    }
    labels = list(evaluations)
    names = sorted({computation[t] for e in evaluations.values() for t in e["per_task"]})
    rows = []
    for name in names:
        cells = []
        for label in labels:
            rates = [
                r["correct_rate"] for t, r in evaluations[label]["per_task"].items() if computation[t] == name
            ]
            solved = sum(rate > 0 for rate in rates)
            cells.append(f"{fmt(sum(rates) / len(rates))} ({solved}/{len(rates)} tasks)")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    header = ["| computation | " + " | ".join(labels) + " |", "| --- |" + " --- |" * len(labels)]
    return header, rows


def build(runs: list[Path], out: Path, tasks: Path | None = None) -> str:
    evaluations = load_evaluations(runs)
    sft_log = json.loads(find(runs, "sft_log_history.json").read_text())
    rl_log = json.loads(find(runs, "rl_log_history.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    labels = list(evaluations)
    comparisons = [
        (a, b, paired_summary_differences(evaluations[a], evaluations[b]))
        for a, b in itertools.pairwise(labels)
    ]
    plots = plot_curves(sft_log, rl_log, out)
    rl_steps = [e for e in rl_log if "turn_1/reward" in e]
    mean = lambda key: sum(e.get(key) or 0.0 for e in rl_steps) / len(rl_steps) if rl_steps else None  # noqa: E731
    samples = ", ".join(
        f"{label} {e['num_tasks']} x {e['num_samples'] // max(e['num_tasks'], 1)}"
        for label, e in evaluations.items()
    )
    lower = lambda e, p: (e.get("fast_p_lower") or {}).get(p)  # noqa: E731
    lines = [
        "# GPU learning run: held-out synthetic tasks before and after training",
        "",
        f"Tasks x samples per task: {samples}; one turn, temperature 1.0, real GPU reward (timing on).",
        "",
        "| metric | " + " | ".join(labels) + " |",
        "| --- |" + " --- |" * len(labels),
        *[f"| {k} | " + " | ".join(fmt(e[k]) for e in evaluations.values()) + " |" for k in RATES],
        *[
            f"| Fast@{p} | " + " | ".join(fmt(e["fast_p"].get(p)) for e in evaluations.values()) + " |"
            for p in ("1", "1.2")
        ],
        *[
            f"| Fast@{p} (CI lower bound) | "
            + " | ".join(fmt(lower(e, p)) for e in evaluations.values())
            + " |"
            for p in ("1", "1.2")
        ],
    ]
    for a, b, paired in comparisons:
        lines += [
            "",
            f"Paired by task, {a} -> {b} (mean of per-task values; 95 % percentile bootstrap over tasks, "
            "10,000 resamples):",
            "",
            f"| metric | {a} | {b} | difference | 95 % interval | significant |",
            "| --- | --- | --- | --- | --- | --- |",
            *[
                f"| {d.metric} | {d.mean_a:.3f} | {d.mean_b:.3f} | {d.difference:+.3f} | [{d.low:+.3f}, {d.high:+.3f}] | "
                f"{'yes' if d.significant else 'no'} |"
                for d in paired
            ],
        ]
    if tasks is not None:
        header, rows = rates_by_computation(evaluations, tasks)
        lines += [
            "",
            "Correct rate by held-out computation (mean over its tasks; tasks with any correct sample):",
            "",
            *header,
            *rows,
        ]
    lines += [
        "",
        f"TRLOO: {len(rl_steps)} optimizer steps; mean per step: generation {fmt(mean('time/generation_s'))} s, "
        f"environment {fmt(mean('time/environment_s'))} s, optimisation {fmt(mean('time/optimization_s'))} s; "
        f"MRS rejected fraction {fmt(mean('mrs/rejected_frac'))}; tied groups {fmt(mean('filters/tied_group_frac'))}.",
        "",
        "| step | reward | correct | hacked | Fast@1 | generation s | environment s | optimisation s | MRS rejected | tied groups |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *[
            f"| {e['step']} | {fmt(e.get('turn_1/reward'))} | {fmt(e.get('turn_1/correct'))} | "
            f"{fmt(e.get('turn_1/hacked'))} | {fmt(e.get('turn_1/fast_1'))} | {fmt(e.get('time/generation_s'))} | "
            f"{fmt(e.get('time/environment_s'))} | {fmt(e.get('time/optimization_s'))} | "
            f"{fmt(e.get('mrs/rejected_frac'))} | {fmt(e.get('filters/tied_group_frac'))} |"
            for e in rl_steps
        ],
        "",
        *[f"![{name}]({name})" for name in plots],
        "",
    ]
    text = "\n".join(lines)
    (out / "report.md").write_text(text, encoding="utf-8")
    keep = (*RATES, "fast_p", "fast_p_lower", "num_tasks", "num_samples")
    record = {
        "evaluations": {label: {k: e.get(k) for k in keep} for label, e in evaluations.items()},
        "paired": {f"{a} -> {b}": [d.to_dict() for d in paired] for a, b, paired in comparisons},
        "rl_steps": rl_steps,
        "sft_loss": [e for e in sft_log if "loss" in e],
    }
    (out / "learning_run.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return text


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--runs", type=Path, nargs="+", required=True, help="the device calls' output folders"
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="folder for report.md, learning_run.json, plots"
    )
    parser.add_argument(
        "--tasks", type=Path, help="the held-out dataset folder: adds correct rates by computation"
    )
    args = parser.parse_args(argv)
    print(build(args.runs, args.out, args.tasks))


if __name__ == "__main__":
    main()
