"""Score liger-kernel's production Triton kernels with kernel_reward: every one should be `correct`, none `hacked`.

Builds the (PyTorch reference, inlined ModelNew) pair of each kernel from the INSTALLED liger-kernel wheel (pin:
liger-kernel==0.8.5; nothing of liger is stored in this repository), screens each candidate statically, evaluates
every pair with kernel_reward (one sandboxed worker by default, so timings do not overlap), prints a table and
writes JSON. On CUDA it also times every pair independently with triton.testing.do_bench (median, L2 flushed,
reference and candidate alternating) and shows that speedup beside kernel_reward's.

Run from the repository root:
  python -m benchmarks.production_kernels --device cpu                   # Triton interpreter, small sizes
  python -m benchmarks.production_kernels --device cuda --out benchmarks/results/production_kernels_h200.json

Exit status 0 when the evaluations ran (whatever the verdicts; the summary line counts false positives),
2 on bad arguments or a missing liger-kernel.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.production_kernels import liger
from benchmarks.production_kernels.inline import InlineError, package_version
from benchmarks.production_kernels.report import Row, false_positives, format_table, row_from_result

log = logging.getLogger("benchmarks.production_kernels")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.production_kernels",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--device",
        type=_device,
        default=None,
        help="cpu (Triton interpreter) or cuda[:N]; default: cuda when torch sees a GPU, else cpu",
    )
    parser.add_argument(
        "--size",
        choices=liger.SIZES,
        default=None,
        help="task sizes: full (realistic LLM shapes, default on cuda) or small (default on cpu)",
    )
    parser.add_argument(
        "--kernels",
        default=",".join(liger.BY_NAME),
        help=f"comma-separated subset (default: all ten: {','.join(liger.BY_NAME)})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="JSON report path (default: production_kernels_<device>.json in the current directory)",
    )
    parser.add_argument(
        "--pairs-dir",
        type=Path,
        default=None,
        help="keep the built <kernel>_reference.py / <kernel>_candidate.py here (default: a temp dir)",
    )
    parser.add_argument(
        "--timeout", type=float, default=300.0, help="per-candidate wall-clock limit, seconds"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="sandboxed workers per device (default 1: evaluations, and their timings, one at a time)",
    )
    parser.add_argument(
        "--do-bench-repeats",
        type=int,
        default=3,
        help="CUDA only: do_bench rounds per side for the independent speedup (0: skip it)",
    )
    parser.add_argument(
        "--shape-check",
        choices=("report", "fail", "off"),
        default="report",
        help="the reward's resized-input run: 'fail' also counts a kernel wrong (or not launched) at resized sizes",
    )
    parser.add_argument(
        "--launch-ledger",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="PoolConfig.launch_ledger: CUPTI's kernel records (not the runner's report) decide coverage and "
        "whether a timed call ran the candidate's own kernels; neither flag: the pool's default, on for a GPU",
    )
    parser.add_argument("--list", action="store_true", help="print the kernel names and exit")
    return parser


def _device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:N, got {text!r}")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.list:
        print("\n".join(liger.BY_NAME))
        return 0
    names = [name.strip() for name in args.kernels.split(",") if name.strip()]
    unknown = sorted(set(names) - set(liger.BY_NAME))
    if unknown or not names:
        parser.error(f"--kernels: unknown {unknown or 'empty list'}; choose from {', '.join(liger.BY_NAME)}")
    if args.workers < 1 or args.timeout <= 0 or args.do_bench_repeats < 0:
        parser.error("--workers must be >= 1, --timeout > 0 and --do-bench-repeats >= 0")
    try:
        version = package_version(liger.PACKAGE)
    except InlineError:
        parser.error(f"liger-kernel is not installed: pip install liger-kernel=={liger.PINNED_VERSION}")
    if version != liger.PINNED_VERSION:
        log.warning(
            "liger-kernel %s is installed; the pairs are written for %s", version, liger.PINNED_VERSION
        )

    import torch

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        parser.error("--device cuda, but torch sees no CUDA device")
    if device.startswith("cuda") and os.environ.get("TRITON_INTERPRET") == "1":
        parser.error("TRITON_INTERPRET=1 is set: unset it to run kernels on the GPU")
    size = args.size or ("small" if device == "cpu" else "full")
    out = args.out or Path(f"production_kernels_{device.replace(':', '')}.json")

    with tempfile.TemporaryDirectory(prefix="production_kernels_") as scratch:
        pairs_dir = args.pairs_dir or Path(scratch)
        pairs_dir.mkdir(parents=True, exist_ok=True)
        started = time.time()
        rows = run(
            names,
            device=device,
            size=size,
            pairs_dir=pairs_dir,
            timeout=args.timeout,
            workers=args.workers,
            do_bench_repeats=args.do_bench_repeats,
            shape_check=args.shape_check,
            launch_ledger=args.launch_ledger,
        )
        elapsed = time.time() - started
    print(format_table(rows))
    wrong = false_positives(rows)
    gaps = [row.kernel for row in rows if row.verdict == "interpreter_unsupported"]
    print(
        f"\n{len(rows)} kernels on {device} ({size} sizes) in {elapsed:.0f} s: "
        f"{sum(row.verdict == 'correct' for row in rows)} correct, {len(gaps)} interpreter_unsupported{_names(gaps)}, "
        f"{len(wrong)} false positives{_names(wrong)}"
    )
    report = {
        "liger_kernel": version,
        "device": device,
        "device_name": _device_name(torch, device),
        "size": size,
        "torch": torch.__version__,
        "triton": _triton_version(),
        "python": sys.version.split()[0],
        "seconds": round(elapsed, 1),
        "false_positives": wrong,
        "interpreter_unsupported": gaps,
        "launch_ledger": args.launch_ledger,  # None: the pool's default (on for a GPU)
        "coverage_from_launch_ledger": sum("coverage_from_launch_ledger" in row.flags for row in rows),
        "command": " ".join(
            ["python -m benchmarks.production_kernels", *(argv if argv is not None else sys.argv[1:])]
        ),
        "kernels": [row.to_dict() for row in rows],
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


def run(
    names: list[str],
    *,
    device: str,
    size: str,
    pairs_dir: Path,
    timeout: float,
    workers: int,
    do_bench_repeats: int,
    shape_check: str = "report",
    launch_ledger: bool | None = None,
) -> list[Row]:
    """Build, screen and evaluate the named kernels (then do_bench them on CUDA); one row each, in order."""
    from kernel_reward import Evaluator
    from kernel_reward.screen.static_checks import check_candidate

    rows: dict[str, Row] = {}
    built: dict[str, tuple[str, str]] = {}
    for name in names:
        kernel = liger.BY_NAME[name]
        try:
            reference, candidate = kernel.reference_code(size), kernel.candidate_code()
        except (InlineError, ValueError) as exc:  # the wheel is not shaped as the spec expects
            rows[name] = Row(kernel=name, verdict="build_error", error=f"{type(exc).__name__}: {exc}")
            continue
        (pairs_dir / f"{name}_reference.py").write_text(reference)
        (pairs_dir / f"{name}_candidate.py").write_text(candidate)
        built[name] = (reference, candidate)
    findings = {
        name: [f.describe() for f in check_candidate(pair[1]).findings] for name, pair in built.items()
    }
    log.info("evaluating %d pairs on %s (%s sizes; pairs in %s)", len(built), device, size, pairs_dir)
    with Evaluator(
        device=device,
        workers=workers,
        timeout=timeout,
        progress=False,
        shape_check=shape_check,
        pool_options=None if launch_ledger is None else {"launch_ledger": launch_ledger},
    ) as evaluator:
        results = evaluator.evaluate_many(list(built.values()))
    for name, result in zip(built, results, strict=True):
        rows[name] = row_from_result(name, result, findings[name])
    if device.startswith("cuda") and do_bench_repeats:
        from benchmarks.production_kernels.bench import do_bench_pair

        for name in built:
            log.info("do_bench %s", name)
            try:
                rows[name].do_bench = do_bench_pair(
                    pairs_dir / f"{name}_reference.py",
                    pairs_dir / f"{name}_candidate.py",
                    device=device,
                    repeats=do_bench_repeats,
                ).to_dict()
            except Exception as exc:  # one pair's failure is reported in its row; the others still run
                rows[name].do_bench_error = f"{type(exc).__name__}: {exc}"
    return [rows[name] for name in names]


def _names(kernels: list[str]) -> str:
    return f" ({', '.join(kernels)})" if kernels else ""


def _device_name(torch: object, device: str) -> str:
    return "Triton interpreter (CPU)" if device == "cpu" else torch.cuda.get_device_name(torch.device(device))


def _triton_version() -> str:
    import triton

    return triton.__version__


if __name__ == "__main__":
    sys.exit(main())
