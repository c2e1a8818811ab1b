"""The project's main job, as a list of stages run in order (the README's first command).

Stages so far:
    build     build the dataset from the task set shipped in the package into OUT/dataset
              (the `small` size preset on machines without CUDA, `full` with it; --preset overrides)
    validate  validate OUT/dataset (card, schema, every row) and fail when anything is wrong

Later stages (train, evaluate) plug in as further functions of the same shape: they receive the parsed
arguments and the summaries of the stages before them, and return their own summary. Each stage's summary
is printed and all of them are written to OUT/pipeline_summary.json.

    .venv/bin/python scripts/pipeline.py                      # build + validate into ./out
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


STAGES: dict[str, Callable[[argparse.Namespace, dict[str, Summary]], Summary]] = {
    "build": stage_build,
    "validate": stage_validate,
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
    return status


if __name__ == "__main__":
    sys.exit(main())
