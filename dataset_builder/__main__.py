"""Command line: `python -m dataset_builder {build,validate,push,task} ...` (see `--help` of each)."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys

logger = logging.getLogger("dataset_builder")

# The values of sources.formats.SourceFormat, spelled out so that --help does not import datasets (a test keeps
# them equal).
FORMATS = ("drkernel", "cudallm", "kernelbench", "sample")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMG]i?B|B)?\s*$", re.IGNORECASE)
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def parse_size(text: str) -> int:
    """'256MB' / '1GiB' / '1000000' -> bytes."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 256MB, 1GiB, 500000)")
    return int(float(match.group(1)) * _UNITS[(match.group(2) or "b").lower()])


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dataset_builder", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress at INFO level")
    sub = parser.add_subparsers(dest="command", required=True)

    build = sub.add_parser(
        "build", help="build a dataset directory (card + zstd Parquet shards) from a source"
    )
    build.add_argument("--source", help="source file or folder (not needed for --format sample)")
    build.add_argument(
        "--format",
        default="sample",
        choices=FORMATS,
        help="source format (default: sample, the shipped task set)",
    )
    build.add_argument("--out", required=True, help="output directory")
    build.add_argument(
        "--preset",
        default="small",
        choices=["small", "full"],
        help="size preset of the shipped task set (sample only; default small)",
    )
    build.add_argument(
        "--check-references",
        action="store_true",
        help="also run each reference on CPU in a subprocess and drop crashing, slow, nondeterministic, input-independent or near-constant ones",
    )
    build.add_argument(
        "--reference-timeout",
        type=float,
        default=60.0,
        help="seconds per reference for --check-references (default 60)",
    )
    build.add_argument(
        "--num-proc",
        type=_positive_int,
        default=1,
        help="worker processes for conversion and checks (default 1)",
    )
    build.add_argument(
        "--prompt-template",
        help="first-turn prompt template file holding {{REFERENCE_CODE}} once (default: the shipped v1)",
    )
    build.add_argument(
        "--shard-size",
        type=parse_size,
        default="256MiB",
        help="uncompressed Arrow bytes per Parquet shard (default 256MiB)",
    )
    build.add_argument(
        "--chunk-rows",
        type=_positive_int,
        default=64,
        help="problem files / tasks per work unit (Parquet sources use row groups)",
    )
    build.add_argument("--license", help="licence identifier for the card (default: from the source format)")
    build.add_argument(
        "--overwrite", action="store_true", help="replace the data and card of an existing output directory"
    )
    build.add_argument("--report-json", help="also write the build report as JSON to this file")

    validate = sub.add_parser(
        "validate", help="check a dataset directory; non-zero exit naming rows and reasons"
    )
    validate.add_argument("path", help="dataset directory (README.md + data/*.parquet)")
    validate.add_argument("--check-references", action="store_true", help="also run each reference (slow)")
    validate.add_argument(
        "--reference-timeout", type=float, default=60.0, help="seconds per reference (default 60)"
    )
    validate.add_argument("--num-proc", type=_positive_int, default=1, help="workers for --check-references")
    validate.add_argument("--json", action="store_true", help="print the report as JSON")

    push = sub.add_parser(
        "push", help="publish a dataset directory as one tagged version on a Hub (HF_ENDPOINT / HF_TOKEN)"
    )
    push.add_argument("path", help="dataset directory to publish")
    push.add_argument(
        "--repo-id", required=True, help="ORG/NAME of the dataset repository (created when missing)"
    )
    push.add_argument(
        "--version", required=True, help="version tag, vX.Y (an existing tag is never overwritten)"
    )
    push.add_argument(
        "--branch", help="commit to this branch (created from main when missing) instead of main"
    )
    push.add_argument(
        "--create-pr", action="store_true", help="open a pull request instead of committing to the branch"
    )
    push.add_argument("--private", action="store_true", help="create the repository as private")
    push.add_argument("--no-verify", action="store_true", help="skip loading the pushed revision back")

    task = sub.add_parser(
        "task",
        help="write one shipped task's reference program at a size preset (e.g. small sizes for the CPU)",
    )
    task.add_argument("name", help="the task's name (a file of dataset_builder/tasks without .py)")
    task.add_argument(
        "--preset", choices=("full", "small"), default="small", help="size preset (default small)"
    )
    task.add_argument("--out", help="write here (default: standard output)")
    return parser


def _build(args: argparse.Namespace) -> int:
    from .builder import build_dataset

    report = build_dataset(
        args.source,
        args.format,
        args.out,
        preset=args.preset,
        prompt_template=args.prompt_template,
        check_references=args.check_references,
        reference_timeout_s=args.reference_timeout,
        num_proc=args.num_proc,
        shard_size=args.shard_size,
        chunk_rows=args.chunk_rows,
        license=args.license,
        overwrite=args.overwrite,
    )
    print(report.to_text())
    if args.report_json:
        with open(args.report_json, "w", encoding="utf-8") as fh:
            json.dump(report.to_dict(), fh, indent=2)
    return 0


def _validate(args: argparse.Namespace) -> int:
    from .validate import validate_dataset

    report = validate_dataset(
        args.path,
        check_references=args.check_references,
        num_proc=args.num_proc,
        reference_timeout_s=args.reference_timeout,
    )
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.to_text())
    return 0 if report.ok else 1


def _push(args: argparse.Namespace) -> int:
    from .publish import push_dataset

    result = push_dataset(
        args.path,
        repo_id=args.repo_id,
        version=args.version,
        branch=args.branch,
        create_pr=args.create_pr,
        private=args.private,
        verify=not args.no_verify,
    )
    print(result.to_text())
    return 0


def _task(args: argparse.Namespace) -> int:
    from .tasks import load_tasks

    try:
        (task,) = load_tasks(args.preset, [args.name])
    except ValueError as exc:
        print(f"error: {str(exc).splitlines()[0][:400]}", file=sys.stderr)
        return 1
    if args.out is None:
        sys.stdout.write(task.source)
    else:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(task.source)
        print(f"wrote {args.name} at its {args.preset} sizes to {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    from .builder import BuildError
    from .prompt import PromptTemplateError
    from .publish import PublishError
    from .sources.formats import SourceError

    try:
        return {"build": _build, "validate": _validate, "push": _push, "task": _task}[args.command](args)
    except (SourceError, BuildError, PromptTemplateError, PublishError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
