"""The project's main job, as a list of stages run in order (the README's first command).

Stages (``--stages`` picks some; docs/training.md#the-main-job describes each one in full):
    build     build the dataset from the shipped task set into OUT/dataset (`small` preset without CUDA)
    validate  validate OUT/dataset (card, schema, every row) and fail when anything is wrong
    split     hold out --heldout-tasks tasks: OUT/splits/train and OUT/splits/heldout (seeded, disjoint)
    sft_data  verified synthetic SFT trajectories, held-out synthetic tasks and an RL pool -> OUT/sft_data
    sft       cold-start SFT -> OUT/sft; held-out synthetic tasks evaluated before and after (OUT/sft_eval)
    train     a few multi-turn TRLOO steps of --recipe on the RL pool (else OUT/splits/train) -> OUT/trained
    curve     TRLOO against a shuffled-reward control on the toy environment, seeds x steps -> OUT/curve
    evaluate  the trained model on the held-out tasks (samples x turns with feedback) -> OUT/eval/report.md

Each stage takes the arguments and the earlier stages' summaries and returns its own (OUT/pipeline_summary.json).

    .venv/bin/python scripts/pipeline.py --stages build --preset full --out /tmp/run
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

logger = logging.getLogger("pipeline")

Summary = dict[str, Any]


def _preset(requested: str) -> str:
    if requested != "auto":
        return requested
    import torch

    return "full" if torch.cuda.is_available() else "small"


def stage_build(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    from dataset_builder import build_dataset

    preset = _preset(args.preset)
    report = build_dataset(
        None,
        "sample",
        Path(args.out) / "dataset",
        preset=preset,
        check_references=args.check_references,
        num_proc=args.num_proc,
        overwrite=True,
    )
    print(report.to_text())
    return {"dataset": str(Path(args.out) / "dataset"), **report.to_dict()}


def stage_validate(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    from dataset_builder import validate_dataset

    report = validate_dataset(Path(args.out) / "dataset")
    print(report.to_text())
    if not report.ok:
        raise StageFailed(f"the dataset in {report.path} has {len(report.problems)} problem(s)")
    return report.to_dict()


def stage_split(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    from datasets import load_dataset

    rows = load_dataset(str(Path(args.out) / "dataset"))["train"]
    if not 0 < args.heldout_tasks < len(rows):
        raise StageFailed(f"--heldout-tasks must be between 1 and {len(rows) - 1}, got {args.heldout_tasks}")
    parts = rows.train_test_split(test_size=args.heldout_tasks, seed=args.seed)
    summary: Summary = {}
    for name, part in (("train", parts["train"]), ("heldout", parts["test"])):
        folder = Path(args.out) / "splits" / name
        part.to_parquet(str(folder / "data" / "train-00000-of-00001.parquet"))
        summary[name] = {"dataset": str(folder), "tasks": len(part)}
    summary["heldout"]["ids"] = sorted(row["uuid"] for row in parts["test"]["extra_info"])
    print(
        f"{summary['train']['tasks']} training tasks, {args.heldout_tasks} held out: {summary['heldout']['ids']}"
    )
    return summary


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


SFT_TOKENIZER_VOCAB = 4096  # an upper bound: the training split's word inventory ends near 1.5k tokens


def _base_model(args: argparse.Namespace) -> str:
    """--model, or a tiny model built locally: after the sft_data stage, into OUT/tiny-model-sft with its
    tokenizer's merges also learned from the SFT training split's text (never the held-out tasks'); otherwise into
    OUT/tiny-model with the built-in corpus only."""
    if args.model is not None:
        return args.model
    from trl_ext.tiny_model import save_tiny_model

    train = Path(args.out) / "sft_data" / "train.jsonl"
    if train.is_file():
        folder = Path(args.out) / "tiny-model-sft"
        if not (folder / "config.json").is_file():
            texts = [
                message["content"]
                for line in train.read_text(encoding="utf-8").splitlines()
                if line.strip()
                for message in json.loads(line)["messages"]
            ]
            save_tiny_model(folder, vocab_size=SFT_TOKENIZER_VOCAB, extra_corpus=texts)
        return str(folder)
    folder = Path(args.out) / "tiny-model"
    if not (folder / "config.json").is_file():
        save_tiny_model(folder)
    return str(folder)


def _synthetic_split(args: argparse.Namespace, tasks: list) -> set[str]:
    """The uuids of the held-out synthetic tasks (see --sft-split)."""
    from dataset_builder.synthetic.split import DEFAULT_HELD_OUT, split_tasks

    if args.sft_split == "variant":
        return {task.uuid for task in split_tasks(tasks, DEFAULT_HELD_OUT).held_out}
    if not 0 < args.sft_heldout_tasks < len(tasks):
        raise StageFailed(
            f"--sft-heldout-tasks must be between 1 and {len(tasks) - 1}, got {args.sft_heldout_tasks}"
        )
    return {task.uuid for task in tasks[-args.sft_heldout_tasks :]}  # the last draws: every family in turn


def stage_sft_data(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    import dataclasses

    from dataset_builder.sft_data import build_trajectories, write_jsonl
    from dataset_builder.synthetic.generate import generate_tasks
    from dataset_builder.synthetic.rows import write_task_dataset
    from kernel_reward import Evaluator

    if args.rl_pool_tasks < 0:
        raise StageFailed(f"--rl-pool-tasks must be >= 0, got {args.rl_pool_tasks}")
    out = Path(args.out) / "sft_data"
    tasks = generate_tasks(args.sft_tasks, seed=args.seed)
    held = _synthetic_split(args, tasks)
    with Evaluator(device="cuda" if _cuda() else "cpu", timeout=args.eval_timeout) as evaluator:
        trajectories, report = build_trajectories(
            tasks, lambda pairs: evaluator.evaluate_many(pairs, progress=True), held_out=()
        )
        pool = _rl_pool(args, tasks, held, evaluator) if args.rl_pool_tasks else []
    trajectories = [
        dataclasses.replace(t, split="held_out" if t.uuid in held else "train") for t in trajectories
    ]
    train = [t for t in trajectories if t.split == "train"]
    solved = {t.uuid for t in trajectories if t.kind == "single_turn"}  # the honest answer was judged correct
    heldout_tasks = [task for task in tasks if task.uuid in held and task.uuid in solved]
    if not train or not heldout_tasks:
        raise StageFailed(
            f"need training trajectories and solvable held-out tasks, got {len(train)} and "
            f"{len(heldout_tasks)} ({report.summary()})"
        )
    write_jsonl(train, out / "train.jsonl")
    write_jsonl([t for t in trajectories if t.split == "held_out"], out / "held_out.jsonl")
    (out / "report.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    write_task_dataset(heldout_tasks, out / "heldout_tasks")
    if pool:
        write_task_dataset(pool, out / "rl_pool")
    train_solutions = {task.solution for task in tasks if task.uuid not in held}
    seen_answer = sorted(task.uuid for task in heldout_tasks if task.solution in train_solutions)
    novel = len(heldout_tasks) - len(seen_answer)
    print(report.summary())
    print(
        f"{len(train)} training trajectories; {len(heldout_tasks)} held-out tasks ({args.sft_split} split), "
        f"{novel} of them with a solution program unlike every training task's"
    )
    if pool:
        print(f"RL pool: {len(pool)} fresh tasks of the training variants in {out / 'rl_pool'}")
    return {
        "train": str(out / "train.jsonl"),
        "train_trajectories": len(train),
        "heldout_dataset": str(out / "heldout_tasks"),
        "heldout_tasks": len(heldout_tasks),
        "rl_pool": str(out / "rl_pool") if pool else None,
        "rl_pool_tasks": len(pool),
        "rl_pool_answers": args.rl_pool_answers,
        "heldout_novel_solutions": novel,
        "heldout_seen_answer": seen_answer,
        "split": args.sft_split,
        **{k: v for k, v in report.to_dict().items() if k != "drops"},
    }


def _rl_pool(args: argparse.Namespace, sft_tasks: list, held: set[str], evaluator) -> list:
    """--rl-pool-tasks fresh tasks for RL after SFT: drawn from another seed, of the variants SFT trained on (so
    the held-out variants stay unseen), none equal to an SFT task, each kept only when its honest solution is
    judged correct (the task is solvable); with --rl-pool-answers seen, only tasks whose honest answer a training
    task has (``dataset_builder.synthetic.pool``)."""
    from dataset_builder.sft_data import completion
    from dataset_builder.synthetic.pool import rl_pool_candidates

    candidates = rl_pool_candidates(sft_tasks, held, args.rl_pool_tasks, args.seed, args.rl_pool_answers)
    candidates = candidates[: 2 * args.rl_pool_tasks]
    results = evaluator.evaluate_many(
        [(t.reference, completion(t.plan, t.solution)) for t in candidates], progress=True
    )
    solvable = [
        task for task, result in zip(candidates, results, strict=True) if result.status.value == "correct"
    ]
    if len(solvable) < args.rl_pool_tasks:
        raise StageFailed(
            f"only {len(solvable)} of {len(candidates)} RL pool candidates are solvable; asked for "
            f"{args.rl_pool_tasks} (with --rl-pool-answers {args.rl_pool_answers})"
        )
    return solvable[: args.rl_pool_tasks]


def _evaluate_synthetic(
    args: argparse.Namespace, model: str, folder: Path, seen_answer: list[str] | None = None
) -> Summary:
    """The held-out synthetic tasks' rates for ``model``; with ``seen_answer`` (the tasks whose honest answer is a
    training task's), the correct rate of those tasks and of the novel ones apart."""
    from kernel_eval.config import EvalConfig
    from kernel_eval.run import run_evaluation

    config = EvalConfig(
        dataset=str(Path(args.out) / "sft_data" / "heldout_tasks"),
        model=model,
        out=str(folder),
        num_samples=args.sft_eval_samples,
        num_turns=1,
        max_new_tokens=args.sft_eval_max_new_tokens,
        temperature=args.sft_eval_temperature,
        timeout=args.eval_timeout,
        seed=args.seed,
    )
    summary = run_evaluation(config)
    rates = {k: summary[k] for k in ("num_tasks", "num_samples", *SFT_METRICS)}
    if seen_answer is not None:
        seen = set(seen_answer)
        per_task = {task: row["correct_rate"] for task, row in summary["per_task"].items()}
        for group, member in (("seen_answer", True), ("novel_answer", False)):
            values = [rate for task, rate in per_task.items() if (task in seen) is member]
            rates[f"correct_rate_{group}"] = sum(values) / len(values) if values else None
            rates[f"tasks_{group}"] = len(values)
    return {"model": model, "report": str(folder / "report.md"), **rates}


def _print_rates(columns: dict[str, Summary]) -> None:
    """The held-out table: SFT_METRICS, then the correct rate of seen-answer and novel-answer tasks apart."""
    print(f"{'metric':<31}" + "".join(f"{name:>8}" for name in columns))
    first = next(iter(columns.values()))
    rows = [(key, key) for key in SFT_METRICS]  # (label, summary key)
    for group in ("seen_answer", "novel_answer"):
        if first.get(f"tasks_{group}"):
            rows.append((f"correct_rate_{group} ({first[f'tasks_{group}']})", f"correct_rate_{group}"))
    for label, key in rows:
        cells = "".join(
            f"{'-' if c.get(key) is None else format(c[key], '.3f'):>8}" for c in columns.values()
        )
        print(f"{label:<31}{cells}")


SFT_METRICS = ("format_rate", "compile_rate", "correct_rate", "hacked_rate")


def stage_sft(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    import subprocess

    out = Path(args.out)
    base = _base_model(args)
    seen_answer = done.get("sft_data", {}).get("heldout_seen_answer")
    before = _evaluate_synthetic(args, base, out / "sft_eval" / "before", seen_answer)
    command = [
        sys.executable,
        str(Path(__file__).resolve().parent / "sft.py"),
        "--config",
        args.sft_recipe,
        "--model_name_or_path",
        base,
        "--dataset_name",
        str(out / "sft_data" / "train.jsonl"),
        "--output_dir",
        str(out / "sft"),
        "--max_steps",
        str(args.sft_steps),
        "--seed",
        str(args.seed),
        "--kinds",
        *args.sft_kinds,
        "--logging_steps",
        str(max(1, args.sft_steps // 10)),
    ]
    if _cuda():
        command += ["--use_cpu", "false"]
    print(" ".join(command), flush=True)
    started = time.perf_counter()
    if subprocess.run(command).returncode != 0:
        raise StageFailed("scripts/sft.py failed (its output is above)")
    train_seconds = round(time.perf_counter() - started, 2)
    after = _evaluate_synthetic(args, str(out / "sft"), out / "sft_eval" / "after", seen_answer)
    print(
        f"held-out synthetic tasks ({before['num_tasks']} tasks x {args.sft_eval_samples} samples, 1 turn; "
        "seen answer: a training task has the same honest answer):"
    )
    _print_rates({"before": before, "after": after})
    return {
        "base_model": base,
        "sft_model": str(out / "sft"),
        "recipe": args.sft_recipe,
        "steps": args.sft_steps,
        "train_seconds": train_seconds,
        "before": before,
        "after": after,
    }


def stage_train(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    import subprocess

    out = Path(args.out)
    after_sft = "sft_model" in done.get("sft", {})
    model = done["sft"]["sft_model"] if after_sft else _base_model(args)
    # After SFT, RL runs on the fresh tasks of the trained variants (sft_data's RL pool), where the SFT model is
    # right some of the time: a group with both right and wrong answers is what gives the policy gradient a signal.
    dataset = done.get("sft_data", {}).get("rl_pool") or str(out / "splits" / "train")
    command = [
        sys.executable,
        str(Path(__file__).resolve().parent / "train.py"),
        "--config",
        args.recipe,
        "--model_name_or_path",
        model,
        "--dataset_name",
        dataset,
        "--output_dir",
        str(out / "trained"),
        "--max_steps",
        str(args.train_steps),
        "--seed",
        str(args.seed),
    ]
    if _cuda():  # the recipe may pin the CPU; on a GPU machine train and reward on the GPU
        command += ["--use_cpu", "false", "--reward_device", "cuda"]
    print(" ".join(command), flush=True)
    if subprocess.run(command).returncode != 0:
        raise StageFailed("scripts/train.py failed (its output is above)")
    signal = rl_signal(out / "trained" / "log_history.json")
    print(
        "RL steps (reward mean, groups with no reward spread, grad norm): "
        + "; ".join(
            f"{s['reward']:.3f}, {s['frac_reward_zero_std']:.2f}, {s['grad_norm']:.3g}" for s in signal
        ),
        flush=True,
    )
    after_rl = None
    if after_sft:  # the same held-out synthetic tasks as the sft stage's table, once more after RL
        seen_answer = done.get("sft_data", {}).get("heldout_seen_answer")
        after_rl = _evaluate_synthetic(args, str(out / "trained"), out / "sft_eval" / "after_rl", seen_answer)
        _print_rates({"base": done["sft"]["before"], "SFT": done["sft"]["after"], "RL": after_rl})
    return {
        "base_model": model,
        "dataset": dataset,
        "trained_model": str(out / "trained"),
        "recipe": args.recipe,
        "steps": args.train_steps,
        "device": "cuda" if _cuda() else "cpu",
        "rl_signal": signal,
        "heldout_after_rl": after_rl,
    }


def stage_curve(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    """A learning curve that fits the CPU: the tiny model on the toy multi-turn environment with the real trainer,
    TRLOO against the control (TRLOO on rewards shuffled within each group), --curve-seeds x --curve-steps."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "learning_curve", Path(__file__).resolve().parents[1] / "benchmarks" / "learning_curve.py"
    )
    learning_curve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(learning_curve)
    folder = Path(args.out) / "curve"
    learning_curve.main(
        ["--out", str(folder), "--steps", str(args.curve_steps), "--estimators", "trloo", "control"]
        + ["--seeds", *map(str, args.curve_seeds)]
    )
    data = json.loads((folder / "curve.json").read_text(encoding="utf-8"))
    tail = {
        f"{run['estimator']}_seed{run['seed']}": round(learning_curve.tail_mean(run["turn_2_reward"]), 4)
        for run in data["runs"]
    }
    return {
        "curve": str(folder / "curve.json"),
        "plot": str(folder / "curve.png"),
        "steps": args.curve_steps,
        "turn_2_reward_last_fifth": tail,
        "trloo_minus_control": data["paired"].get("control"),
    }


def rl_signal(log_history: Path) -> list[dict[str, float]]:
    """Per logged training step: the mean reward, the share of groups whose rewards were all equal (no policy
    gradient from them) and the gradient norm; [] when the trainer wrote no log."""
    if not log_history.is_file():
        return []
    rows = json.loads(log_history.read_text(encoding="utf-8"))
    keys = ("reward", "frac_reward_zero_std", "grad_norm")
    return [{k: float(row[k]) for k in keys} for row in rows if all(k in row for k in keys)]


def stage_evaluate(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    from kernel_eval.config import EvalConfig
    from kernel_eval.run import run_evaluation

    out = Path(args.out)
    config = EvalConfig(
        dataset=str(out / "splits" / "heldout"),
        model=str(out / "trained"),
        out=str(out / "eval"),
        num_samples=args.eval_samples,
        num_turns=args.eval_turns,
        max_new_tokens=args.eval_max_new_tokens,
        seed=args.seed,
    )
    summary = run_evaluation(config)
    keys = (
        "num_tasks",
        "num_samples",
        "num_turns",
        "format_rate",
        "compile_rate",
        "correct_rate",
        "hacked_rate",
        "fast_p",
        "timing_available",
    )
    print(json.dumps({k: summary[k] for k in keys}, indent=2))
    return {"report": str(out / "eval" / "report.md"), **{k: summary[k] for k in keys}}


STAGES: dict[str, Callable[[argparse.Namespace, dict[str, Summary]], Summary]] = {
    "build": stage_build,
    "validate": stage_validate,
    "split": stage_split,
    "sft_data": stage_sft_data,
    "sft": stage_sft,
    "train": stage_train,
    "curve": stage_curve,
    "evaluate": stage_evaluate,
}


class StageFailed(RuntimeError):
    """A stage ran and found its result unacceptable (the pipeline stops with exit status 1)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default="out", help="output folder (default: ./out)")
    parser.add_argument(
        "--stages",
        nargs="+",
        choices=list(STAGES),
        default=list(STAGES),
        help="stages to run, in order (default: all)",
    )
    parser.add_argument(
        "--preset",
        choices=["auto", "small", "full"],
        default="auto",
        help="task sizes: small (CPU, Triton interpreter), full (GPU) or auto (full when CUDA is available)",
    )
    parser.add_argument(
        "--check-references",
        action="store_true",
        help="also run every reference task on CPU (about 5 s each)",
    )
    parser.add_argument("--num-proc", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--heldout-tasks", type=int, default=4, help="shipped tasks kept out of training (default 4)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the held-out split, training and sampling"
    )
    parser.add_argument("--model", help="base model to train (default: a tiny model built locally)")
    parser.add_argument(
        "--recipe",
        default=str(Path(__file__).resolve().parents[1] / "recipes" / "tiny_cpu_rl.yaml"),
        help="training recipe YAML (default: recipes/tiny_cpu_rl.yaml, made for the SFT model)",
    )
    parser.add_argument(
        "--sft-tasks",
        type=int,
        default=48,
        help="synthetic tasks generated for the sft_data stage, training and held-out (default 48)",
    )
    parser.add_argument(
        "--sft-split",
        choices=["task", "variant"],
        default="task",
        help="held-out synthetic tasks: 'task' holds out the last --sft-heldout-tasks draws (fresh "
        "tasks of the training variants); 'variant' holds out whole variants (reduction/amax, "
        "norm/rms_norm, softmax/log_softmax: computations never trained on) (default task)",
    )
    parser.add_argument(
        "--rl-pool-tasks",
        type=int,
        default=4,
        help="also write OUT/sft_data/rl_pool: this many fresh solvable tasks of the variants SFT "
        "trained on; the train stage then runs on them (default 4; 0: none, train on OUT/splits/train)",
    )
    parser.add_argument(
        "--rl-pool-answers",
        choices=["seen", "any"],
        default="seen",
        help="RL pool tasks: 'seen' keeps those whose honest answer an SFT training task has (where the SFT model "
        "is right part of the time, so groups have reward spread), 'any' any fresh task of a trained variant "
        "(the GPU learning run's pool, filtered afterwards by the SFT model's solve rate) (default seen)",
    )
    parser.add_argument(
        "--sft-heldout-tasks",
        type=int,
        default=8,
        help="synthetic tasks held out with --sft-split task (default 8)",
    )
    parser.add_argument(
        "--sft-recipe",
        default=str(Path(__file__).resolve().parents[1] / "recipes" / "tiny_cpu_sft.yaml"),
        help="SFT recipe YAML for scripts/sft.py (default: recipes/tiny_cpu_sft.yaml)",
    )
    parser.add_argument(
        "--sft-steps", type=int, default=1500, help="optimiser steps of the sft stage (default 1500)"
    )
    parser.add_argument(
        "--sft-kinds",
        nargs="+",
        choices=["single_turn", "multi_turn"],
        default=["single_turn"],
        help="trajectory kinds the sft stage trains on (default single_turn: a multi-turn row is "
        "about twice as long, so it halves the steps that fit in the CPU budget)",
    )
    parser.add_argument(
        "--sft-eval-samples",
        type=int,
        default=1,
        help="samples per held-out synthetic task, before and after SFT (default 1)",
    )
    parser.add_argument(
        "--sft-eval-max-new-tokens",
        type=int,
        default=768,
        help="tokens generated per held-out synthetic task (default 768: a full answer of the tiny "
        "tokenizer is ~520-690 tokens)",
    )
    parser.add_argument(
        "--sft-eval-temperature",
        type=float,
        default=0.0,
        help="sampling temperature of the synthetic evaluation (default 0: greedy)",
    )
    parser.add_argument(
        "--eval-timeout",
        type=float,
        default=120.0,
        help="seconds per candidate evaluation in sft_data and the synthetic evaluation (default 120)",
    )
    parser.add_argument(
        "--train-steps", type=int, default=4, help="optimiser steps of the train stage (default 4)"
    )
    parser.add_argument(
        "--curve-steps", type=int, default=40, help="curve stage: training steps per run (default 40)"
    )
    parser.add_argument(
        "--curve-seeds", type=int, nargs="+", default=[0, 1], help="curve stage: seeds, one run per arm each"
    )
    parser.add_argument("--eval-samples", type=int, default=2, help="samples per held-out task (default 2)")
    parser.add_argument(
        "--eval-turns", type=int, default=2, help="turns per sample, with feedback (default 2)"
    )
    parser.add_argument(
        "--eval-max-new-tokens",
        type=int,
        default=32,
        help="tokens per generated turn in the evaluation (default 32, the tiny recipe's length)",
    )
    args = parser.parse_args(argv)
    # checked before the first stage: a typo would otherwise surface only when its stage starts, minutes in
    from trl_ext.script_input import fail

    for option, path in (("--recipe", args.recipe), ("--sft-recipe", args.sft_recipe)):
        if not Path(path).is_file():
            fail(f"{option} {path} does not exist (the shipped recipes are in recipes/)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done: dict[str, Summary] = {}
    status = 0
    for name in args.stages:
        print(f"== stage {name} ==", flush=True)
        started = time.perf_counter()
        try:
            done[name] = STAGES[name](args, done)
        except StageFailed as exc:
            print(f"stage {name} failed: {exc}", file=sys.stderr)
            done[name] = {"failed": str(exc)}
            status = 1
        done[name]["stage_seconds"] = round(time.perf_counter() - started, 2)
        if status:
            break
    summary_path = out / "pipeline_summary.json"
    summary_path.write_text(json.dumps(done, indent=2, default=str), encoding="utf-8")
    print(f"== {'failed' if status else 'done'}: summary in {summary_path} ==")
    if "report" in done.get("evaluate", {}):
        print(f"evaluation report: {done['evaluate']['report']}")
    return status


if __name__ == "__main__":
    sys.exit(main())
