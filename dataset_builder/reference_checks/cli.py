"""Command line: ``python -m dataset_builder.reference_checks [FILE ...] [--tasks small|full]``."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from .run import check_references


def main(argv: Sequence[str] | None = None) -> int:
    """Check reference files and/or the shipped task set; print one line per program; exit 1 on any problem."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m dataset_builder.reference_checks",
        description="Run PyTorch reference programs on CPU in isolated child processes and report problems "
        "(crash, timeout, nondeterministic, input_independent, near_constant, no_tensor_output, non_finite).",
    )
    parser.add_argument("files", nargs="*", type=Path, help="reference programs (*.py) to check")
    parser.add_argument(
        "--tasks", choices=["small", "full"], help="also check the shipped task set at this size preset"
    )
    parser.add_argument("--names", nargs="+", help="with --tasks: only these task names")
    parser.add_argument("--entry-point", default="Model", help="nn.Module class to build (default: Model)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per program (default: 60)")
    parser.add_argument("--workers", type=int, default=2, help="programs checked at a time (default: 2)")
    parser.add_argument("--json", action="store_true", help="print one JSON object per program instead")
    args = parser.parse_args(argv)
    if args.names and not args.tasks:
        parser.error("--names needs --tasks")

    labelled: list[tuple[str, str]] = []
    for path in args.files:
        try:
            labelled.append((str(path), path.read_text(encoding="utf-8")))
        except OSError as exc:
            parser.error(f"cannot read {path}: {exc}")
    if args.tasks:
        from dataset_builder.tasks import load_tasks

        try:
            labelled += [
                (f"task {t.name} ({t.preset})", t.source) for t in load_tasks(args.tasks, args.names)
            ]
        except ValueError as exc:
            parser.error(str(exc))
    if not labelled:
        parser.error("nothing to check: give reference files and/or --tasks")

    results = check_references(
        [src for _, src in labelled],
        num_workers=args.workers,
        timeout_s=args.timeout,
        entry_point=args.entry_point,
    )
    for (label, _), result in zip(labelled, results, strict=True):
        if args.json:
            print(json.dumps({"program": label, **result.to_dict()}))
        else:
            verdict = "ok" if result.ok else ",".join(p.value for p in result.problems)
            first_line = result.details.splitlines()[0] if result.details else ""
            print(f"{label}\t{verdict}\t{result.seconds:.1f}s" + ("" if result.ok else f"\t{first_line}"))
    bad = sum(not r.ok for r in results)
    print(f"{len(results) - bad} ok, {bad} with problems", file=sys.stderr)
    return 1 if bad else 0
