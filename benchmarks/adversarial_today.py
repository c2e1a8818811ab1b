"""Run the adversarial corpus entries against TODAY's evaluator and tabulate which attacks win.

The ``forge_*``, ``tamper_*``, ``peek_*``, ``timing_*`` and ``sandbox_*`` entries of hack_corpus/entries/ are
hostile candidates whose own kernel is wrong: a ``correct`` verdict (or any reward above 0) means the attack won.
Each is evaluated as tests/kernel_reward/test_corpus.py does it (the file as a completion, ``python -m
kernel_reward.judge.pipeline`` in a fresh subprocess, ``seed_base=1234``); ``--backend pool`` sends the same
requests through ``kernel_reward.Evaluator``; ``--launch-ledger`` runs either with the launch ledger.

    python benchmarks/adversarial_today.py --json-out adversarial_today.json
    python benchmarks/adversarial_today.py --device cuda -k timing_ --json-out adversarial_gpu.json
    python benchmarks/adversarial_today.py --device cuda -k tamper_launch,pre_run_hook --launch-ledger

GPU-only entries (``gpu`` in their header) are listed as skipped on the CPU. ``--ref COMMIT`` evaluates the code
of that commit (exported with ``git archive`` to a temporary directory; this checkout's entries and this script
are copied in), so a half-edited working tree does not decide what "today" means.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PREFIXES = ("forge_", "tamper_", "peek_", "timing_", "sandbox_")


def attack_class(source: str) -> str:
    """The class an entry names first in its docstring (``"Forged verdict frame: routes..."``)."""
    docstring = ast.get_docstring(ast.parse(source)) or ""
    return docstring.split(":", 1)[0].strip() or "?"


def run_oneshot(entry, device: str, timeout_s: float) -> dict:
    """One entry in a fresh ``kernel_reward.judge.pipeline`` process (with ``--launch-ledger`` on CUDA when the
    environment's ``KR_TEST_LAUNCH_LEDGER`` is 1, as the corpus test)."""
    from hack_corpus import as_completion
    from tests.kernel_reward.conftest import run_worker_subprocess

    options = dict(entry.options)
    if device == "cuda":
        options.setdefault("timing_budget_ms", 100.0)  # as test_corpus_verdict_gpu
    with tempfile.TemporaryDirectory(prefix="kr_adv_") as tmp:
        try:
            result = run_worker_subprocess(
                entry.reference,
                as_completion(entry.source),
                device=device,
                tmp_path=Path(tmp),
                timeout_s=timeout_s,
                **options,
            )
        except (AssertionError, subprocess.TimeoutExpired) as exc:  # the process died or hung: no verdict
            return {"status": "no_result", "reward": 0.0, "error": f"{type(exc).__name__}: {exc}"}
    return result.to_dict()


def run_pool(entries: list, device: str, timeout_s: float, launch_ledger: bool = False) -> list[dict]:
    from hack_corpus.through_the_pool import judge_through_the_pool

    results = judge_through_the_pool(
        entries, device, launch_ledger=launch_ledger, timeout_s=timeout_s, progress=None
    )
    return [result.to_dict() for result in results]


def summarize(entry, result: dict | None, seconds: float | None, skipped: str | None = None) -> dict:
    row = {
        "entry": entry.name,
        "class": attack_class(entry.source),
        "expected": entry.expect,
        "gpu_only": entry.gpu_only,
        "seconds": None if seconds is None else round(seconds, 2),
    }
    if skipped is not None:
        return {**row, "verdict": "skipped", "reward": None, "won": None, "note": skipped}
    reasons = ",".join(result.get("hack_reasons") or [])
    error = (result.get("error") or "").strip().splitlines()
    return {
        **row,
        "verdict": result["status"],
        "reward": result.get("reward"),
        # An attack wins when the entry is scored correct or paid at all (its own kernel is wrong).
        "won": result["status"] == "correct" or (result.get("reward") or 0) > 0,
        "hack_reasons": reasons,
        "speedup": result.get("speedup"),
        "coverage": result.get("coverage"),
        "flags": result.get("flags") or [],
        "launch_ledger": ((result.get("timing_method") or {}).get("diagnostics") or {}).get("launch_ledger"),
        "note": (error[0] if error else "")[:120],
    }


def print_table(rows: list[dict]) -> None:
    header = ("entry", "class", "expected", "verdict today", "reward today", "speedup", "coverage", "won")
    table = [header]
    for r in rows:
        verdict = r["verdict"] + (f" ({r['hack_reasons']})" if r.get("hack_reasons") else "")
        numbers = [_number(r.get(key)) for key in ("reward", "speedup", "coverage")]
        won = {True: "WIN", False: "no", None: "-"}[r["won"]]
        table.append((r["entry"], r["class"], r["expected"], verdict, *numbers, won))
    widths = [max(len(str(line[i])) for line in table) for i in range(len(header))]
    for index, line in enumerate(table):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))
    won = sum(r["won"] is True for r in rows)
    ran = sum(r["won"] is not None for r in rows)
    print(f"\n{won} of {ran} evaluated attacks won today ({len(rows) - ran} skipped)")


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def rerun_at_ref(ref: str, argv: list[str]) -> int:
    """Run this script inside an export of ``ref`` (with today's entries copied in) and return its exit code."""
    with tempfile.TemporaryDirectory(prefix="kr_adv_ref_") as tmp:
        archive = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "archive", ref], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        corpus = Path("hack_corpus/entries")
        for path in (REPO_ROOT / corpus).glob("*.py"):
            if path.name.startswith(PREFIXES):
                shutil.copy2(path, Path(tmp) / corpus / path.name)
        script = Path(tmp) / "benchmarks" / Path(__file__).name
        script.parent.mkdir(exist_ok=True)
        shutil.copy2(__file__, script)
        command = [sys.executable, str(script), *argv, "--ref-label", f"commit {ref}"]
        return subprocess.run(command, cwd=tmp).returncode


def main(argv: list[str] | None = None) -> int:
    summary, details = __doc__.split("\n\n", 1)
    parser = argparse.ArgumentParser(
        description=summary, epilog=details, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--device", choices=("cpu", "cuda"), default="cpu", help="cpu: Triton interpreter (default)"
    )
    parser.add_argument(
        "--backend",
        choices=("oneshot", "pool"),
        default="oneshot",
        help="oneshot: python -m kernel_reward.judge.pipeline per entry, as the corpus test (default); "
        "pool: kernel_reward.Evaluator (zygote + sandboxed children)",
    )
    parser.add_argument(
        "-k",
        "--filter",
        default="",
        help="only entries whose name contains this text (or one of these, comma-separated)",
    )
    parser.add_argument(
        "--launch-ledger",
        action="store_true",
        help="evaluate with the launch ledger (CUDA: CUPTI's records decide coverage and own launches)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        help="one-shot evaluations run in parallel (default 2 on cpu; 1 on cuda, where parallel "
        "evaluations would time each other)",
    )
    parser.add_argument(
        "--timeout-s", type=float, default=240.0, help="per-entry wall clock, seconds (default 240)"
    )
    parser.add_argument(
        "--json-out", type=Path, default=None, help="write the rows (and run metadata) as JSON here"
    )
    parser.add_argument(
        "--ref",
        default=None,
        help="evaluate the code of this git commit (e.g. HEAD) instead of the working tree",
    )
    parser.add_argument("--ref-label", default="working tree", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ref is not None:
        rest = [
            "--device",
            args.device,
            "--backend",
            args.backend,
            "-k",
            args.filter,
            "--timeout-s",
            str(args.timeout_s),
            *(["--launch-ledger"] if args.launch_ledger else []),
        ]
        if args.jobs is not None:
            rest += ["--jobs", str(args.jobs)]
        if args.json_out is not None:  # the export is temporary: the JSON goes where the caller asked
            rest += ["--json-out", str(args.json_out.resolve())]
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", args.ref],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return rerun_at_ref(commit, rest)

    sys.path.insert(0, str(REPO_ROOT))
    from hack_corpus import load_corpus

    wanted = [text for text in args.filter.split(",") if text] or [""]
    entries = [
        e for e in load_corpus() if e.name.startswith(PREFIXES) and any(text in e.name for text in wanted)
    ]
    if not entries:
        parser.error(f"no adversarial entries match {args.filter!r}")
    runnable = [e for e in entries if not (e.gpu_only and args.device == "cpu")]
    rows: dict[str, dict] = {
        e.name: summarize(e, None, 0.0, "gpu-only entry") for e in entries if e not in runnable
    }
    started = time.perf_counter()
    if args.backend == "pool":
        results = run_pool(runnable, args.device, args.timeout_s, args.launch_ledger)
        for entry, result in zip(runnable, results, strict=True):
            rows[entry.name] = summarize(entry, result, None)
    else:
        if args.launch_ledger:
            from tests.kernel_reward.conftest import LEDGER_ENV

            os.environ[LEDGER_ENV] = "1"  # run_worker_subprocess passes --launch-ledger on CUDA

        def one(entry):
            start = time.perf_counter()
            return entry, run_oneshot(entry, args.device, args.timeout_s), time.perf_counter() - start

        jobs = args.jobs if args.jobs is not None else (1 if args.device == "cuda" else 2)
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
            for entry, result, seconds in pool.map(one, runnable):
                rows[entry.name] = summarize(entry, result, seconds)
    ordered = [rows[e.name] for e in entries]
    print_table(ordered)
    if args.json_out is not None:
        import torch
        import triton

        meta = {
            "code": args.ref_label,
            "device": args.device,
            "backend": args.backend,
            "launch_ledger": args.launch_ledger,
            "torch": torch.__version__,
            "triton": triton.__version__,
            "wall_s": round(time.perf_counter() - started, 1),
        }
        args.json_out.write_text(json.dumps({**meta, "rows": ordered}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
