"""The project's main job, as a list of stages run in order (the README's first command).

Stages:
    build     build the dataset from the task set shipped in the package into OUT/dataset
              (the `small` size preset on machines without CUDA, `full` with it; --preset overrides)
    validate  validate OUT/dataset (card, schema, every row) and fail when anything is wrong
    split     hold out --heldout-tasks tasks: OUT/splits/train and OUT/splits/heldout (seeded, disjoint)
    train     a few multi-turn TRLOO steps of --recipe (default: the tiny CPU recipe on a tiny model built
              locally) on OUT/splits/train against the real kernel reward -> OUT/trained
    evaluate  the trained model on the held-out tasks (samples x turns with feedback) -> OUT/eval/report.md

Each stage is a function that receives the parsed arguments and the summaries of the stages before it and
returns its own summary; the summaries are printed and written to OUT/pipeline_summary.json. With CUDA, the
trainer, its reward and the evaluation use the GPU; without it, the CPU and the Triton interpreter.

    .venv/bin/python scripts/pipeline.py                      # build ... evaluate into ./out
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
    print(f"{summary['train']['tasks']} training tasks, {args.heldout_tasks} held out: {summary['heldout']['ids']}")
    return summary


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def stage_train(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    import subprocess

    out = Path(args.out)
    model = args.model
    if model is None:
        from trl_ext.tiny_model import save_tiny_model

        model = str(save_tiny_model(out / "tiny-model"))
    command = [
        sys.executable, str(Path(__file__).resolve().parent / "train.py"), "--config", args.recipe,
        "--model_name_or_path", model, "--dataset_name", str(out / "splits" / "train"),
        "--output_dir", str(out / "trained"), "--max_steps", str(args.train_steps), "--seed", str(args.seed),
    ]
    if _cuda():  # the recipe may pin the CPU; on a GPU machine train and reward on the GPU
        command += ["--use_cpu", "false", "--reward_device", "cuda"]
    print(" ".join(command), flush=True)
    if subprocess.run(command).returncode != 0:
        raise StageFailed("scripts/train.py failed (its output is above)")
    return {"base_model": model, "trained_model": str(out / "trained"), "recipe": args.recipe,
            "steps": args.train_steps, "device": "cuda" if _cuda() else "cpu"}


def stage_evaluate(args: argparse.Namespace, done: dict[str, Summary]) -> Summary:
    from kernel_eval.config import EvalConfig
    from kernel_eval.run import run_evaluation

    out = Path(args.out)
    config = EvalConfig(
        dataset=str(out / "splits" / "heldout"), model=str(out / "trained"), out=str(out / "eval"),
        num_samples=args.eval_samples, num_turns=args.eval_turns, max_new_tokens=args.eval_max_new_tokens,
        seed=args.seed,
    )
    summary = run_evaluation(config)
    keys = ("num_tasks", "num_samples", "num_turns", "format_rate", "compile_rate", "correct_rate", "hacked_rate",
            "fast_p", "timing_available")
    print(json.dumps({k: summary[k] for k in keys}, indent=2))
    return {"report": str(out / "eval" / "report.md"), **{k: summary[k] for k in keys}}


STAGES: dict[str, Callable[[argparse.Namespace, dict[str, Summary]], Summary]] = {
    "build": stage_build,
    "validate": stage_validate,
    "split": stage_split,
    "train": stage_train,
    "evaluate": stage_evaluate,
}


class StageFailed(RuntimeError):
    """A stage ran and found its result unacceptable (the pipeline stops with exit status 1)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="out", help="output folder (default: ./out)")
    parser.add_argument(
        "--stages", nargs="+", choices=list(STAGES), default=list(STAGES), help="stages to run, in order (default: all)"
    )
    parser.add_argument(
        "--preset",
        choices=["auto", "small", "full"],
        default="auto",
        help="task sizes: small (CPU, Triton interpreter), full (GPU) or auto (full when CUDA is available)",
    )
    parser.add_argument(
        "--check-references", action="store_true", help="also run every reference task on CPU (about 5 s each)"
    )
    parser.add_argument("--num-proc", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--heldout-tasks", type=int, default=4, help="shipped tasks kept out of training (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the held-out split, training and sampling")
    parser.add_argument("--model", help="base model to train (default: a tiny model built locally)")
    parser.add_argument("--recipe", default=str(Path(__file__).resolve().parents[1] / "recipes" / "tiny_cpu.yaml"),
                        help="training recipe YAML (default: recipes/tiny_cpu.yaml)")
    parser.add_argument("--train-steps", type=int, default=3, help="optimiser steps of the train stage (default 3)")
    parser.add_argument("--eval-samples", type=int, default=2, help="samples per held-out task (default 2)")
    parser.add_argument("--eval-turns", type=int, default=2, help="turns per sample, with feedback (default 2)")
    parser.add_argument("--eval-max-new-tokens", type=int, default=32,
                        help="tokens per generated turn in the evaluation (default 32, the tiny recipe's length)")
    return parser.parse_args(argv)


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
