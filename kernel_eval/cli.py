"""Command line of the evaluation harness (``drkernel-evaluate`` and ``scripts/evaluate.py``).

    drkernel-evaluate --dataset DIR_OR_NAME --completions FILE.jsonl --out OUT [--device cpu|cuda]
    drkernel-evaluate --dataset DIR_OR_NAME --model PATH [--adapter PATH] --out OUT [--num-samples N ...]
    drkernel-evaluate --dataset DIR_OR_NAME --endpoint URL --model SERVED_NAME --out OUT
    drkernel-evaluate --compare RUN_A RUN_B

Options are the fields of ``EvalConfig``; ``--help`` lists them with their help text.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import types
import typing
from typing import Any

from .config import EvalConfig

logger = logging.getLogger(__name__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="drkernel-evaluate",
        description="Evaluate saved completions or a model on kernel tasks: Fast@p, rates per turn, report.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    hints = typing.get_type_hints(EvalConfig)
    for f in dataclasses.fields(EvalConfig):
        flag = "--" + f.name.replace("_", "-")
        kind = hints[f.name]
        args = (
            [t for t in typing.get_args(kind) if t is not type(None)]
            if isinstance(kind, types.UnionType)
            else [kind]
        )
        base = args[0] if args else kind
        kwargs: dict[str, Any] = {"help": f.metadata.get("help", ""), "dest": f.name}
        if f.default is not dataclasses.MISSING:
            kwargs["default"] = f.default
        if typing.get_origin(base) is list:
            kwargs.update(nargs="+", type=typing.get_args(base)[0])
        elif typing.get_origin(base) is typing.Literal:
            kwargs.update(choices=list(typing.get_args(base)))
        else:
            kwargs["type"] = base
        parser.add_argument(flag, **kwargs)
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("RUN_A", "RUN_B"),
        help="print side-by-side tables of two finished runs (folders or summary.json files) and exit",
    )
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser


def parse_config(argv: list[str] | None = None) -> tuple[EvalConfig | None, argparse.Namespace]:
    """Parse the command line; the config is None for ``--compare``."""
    parser = build_parser()
    namespace = parser.parse_args(argv)
    if namespace.compare:
        return None, namespace
    missing = [name for name in ("dataset", "out") if getattr(namespace, name) is None]
    if missing:
        parser.error(f"the following arguments are required: {', '.join('--' + m for m in missing)}")
    values = {f.name: getattr(namespace, f.name) for f in dataclasses.fields(EvalConfig)}
    try:
        return EvalConfig(**values), namespace
    except ValueError as exc:
        parser.error(str(exc))
        raise  # unreachable: parser.error exits


def main(argv: list[str] | None = None) -> int:
    config, namespace = parse_config(argv)
    logging.basicConfig(level=namespace.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if config is None:
        from .compare import compare_summaries, load_summary

        a, b = namespace.compare
        sys.stdout.write(compare_summaries(load_summary(a), load_summary(b), names=(a, b)))
        return 0
    from .run import run_evaluation
    from .tasks import DatasetUnavailable

    try:
        summary = run_evaluation(config)
    except DatasetUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    fast = ", ".join(f"Fast@{k}={'n/a' if v is None else f'{v:.3f}'}" for k, v in summary["fast_p"].items())
    fast += (
        " (by the interval's lower end: "
        + ", ".join(f"{k}={'n/a' if v is None else f'{v:.3f}'}" for k, v in summary["fast_p_lower"].items())
        + ")"
    )
    sys.stdout.write(
        f"{summary['num_samples']} samples x {summary['num_turns']} turn(s): format {summary['format_rate']:.3f}, "
        f"compile {summary['compile_rate']:.3f}, correct {summary['correct_rate']:.3f}, "
        f"hacked {summary['hacked_rate']:.3f}; {fast}\n"
        f"report: {config.out}/report.md\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
