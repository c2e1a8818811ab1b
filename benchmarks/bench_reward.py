"""Benchmark the single-candidate reward on a GPU: timing fidelity, repeatability, seconds per phase.

    python benchmarks/bench_reward.py --device cuda --tasks all --json-out $OUT/bench_reward.json

Sections (``--sections``; benchmarks/README.md says what each one measures and its targets):
  fidelity       each selected shipped task timed against ITSELF in one process (benchmarks.inprocess_timer)
  fidelity_judge the same tasks timed against themselves by the TRUSTED JUDGE's clock (kernel_reward.timing)
  honest         full evaluate_request runs of the honest GPU candidates of the hack corpus
  repeatability  one honest candidate evaluated N times by a one-worker pool: CV of the speedup
  coverage       (opt-in) events against profiler coverage on every honest candidate correct on the GPU
  phases         mean seconds per phase over all evaluate_request runs above
With fidelity_judge, also the timing slot's steps by task size (benchmarks/slot_profile.py).
``--throughput`` runs the pool throughput benchmark (benchmarks/throughput.py) instead.
Prints a table per section and writes everything (raw numbers included) as JSON.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a plain script from a checkout (the GPU machine has no install)
    sys.path.insert(0, str(REPO_ROOT))
CORPUS_DIR = REPO_ROOT / "hack_corpus" / "entries"
HONEST_GPU = {"honest_add_relu_big_gpu": "add_relu_big", "honest_matmul_ieee_gpu": "matmul_big"}

from benchmarks.slot_profile import SIZE_BOUNDS_MB, profile_by_size  # noqa: E402  (after the path fix)

log = logging.getLogger("bench_reward")


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    widths = {c: max(len(c), *(len(cell(r.get(c, ""))) for r in rows)) if rows else len(c) for c in columns}
    lines = ["  ".join(c.ljust(widths[c]) for c in columns)]
    lines += ["  ".join(cell(r.get(c, "")).ljust(widths[c]) for c in columns) for r in rows]
    return "\n".join(lines)


def fidelity(task_names: list[str] | None, device: str, budget_ms: float) -> dict[str, Any]:
    """Self-speedup of each shipped task's reference (the timing method's error floor)."""
    import torch

    try:
        from tqdm import tqdm
    except ImportError:  # the GPU machine may lack tqdm; progress bars are a nicety there

        def tqdm(items, **_kwargs):
            return items

    from benchmarks.inprocess_timer import time_pair
    from dataset_builder.tasks import load_tasks  # stdlib + kernel_reward.screen.sizes: no `datasets` needed
    from kernel_reward.common.loading import unload, write_and_import
    from kernel_reward.common.tensors import make_inputs

    torch_device = torch.device(device)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in tqdm(load_tasks("full", task_names), desc="fidelity", file=sys.stderr):
            module = write_and_import(task.source, Path(tmp), "bench")
            try:
                init = list(module.get_init_inputs())
                torch.manual_seed(0)
                first = module.Model(*init).to(torch_device)
                torch.manual_seed(0)
                second = module.Model(*init).to(torch_device)
                pool = [make_inputs(module, seed, torch_device) for seed in (1, 2)]
                paired = time_pair(
                    first,
                    second,
                    pool,
                    torch_device,
                    budget_ms=budget_ms,
                    warmup_calls=5,
                    min_calls=20,
                    max_calls=500,
                    l2_flush_mb=256,
                )
                rows.append(
                    {
                        "task": task.name,
                        "ref_ms": paired.reference.median_ms,
                        "cand_ms": paired.candidate.median_ms,
                        "speedup": paired.speedup,
                        "abs_log": abs(math.log(paired.speedup)),
                        "ci_low": paired.speedup_ci[0],
                        "ci_high": paired.speedup_ci[1],
                        "samples": paired.reference.num_samples,
                    }
                )
            except Exception as exc:  # report and keep going: one broken task must not hide the others
                rows.append({"task": task.name, "error": f"{type(exc).__name__}: {exc}"[:300]})
            finally:
                unload(module)
                torch.cuda.empty_cache()
    return {"rows": rows, "summary": _self_speedup_summary(rows)}


def fidelity_by_batch(
    task_names: list[str] | None, device: str, budget_ms: float, targets_ms: list[float]
) -> list[dict[str, Any]]:
    """``fidelity_judge`` once per batch target (``measure.TARGET_BATCH_MS``, which sets K): per task and target,
    K and the self-speedup with its interval."""
    from kernel_reward.timing import measure

    default = measure.TARGET_BATCH_MS
    rows = []
    try:
        for target in targets_ms:
            measure.TARGET_BATCH_MS = target
            for row in fidelity_judge(task_names, device, budget_ms)["rows"]:
                rows.append(
                    {
                        "task": row["task"],
                        "target_ms": target,
                        "calls_per_batch": row.get("calls_per_batch"),
                        "speedup": row.get("speedup"),
                        "ci": [row.get("ci_low"), row.get("ci_high")],
                        "error": row.get("error"),
                    }
                )
    finally:
        measure.TARGET_BATCH_MS = default
    return rows


def fidelity_judge(task_names: list[str] | None, device: str, budget_ms: float) -> dict[str, Any]:
    """Self-speedup through the judge / runner split: one runner serves every task (a fresh arena, module and
    model each), the judge times the reference against the same program loaded in the runner as ``ModelNew``."""

    import torch

    from dataset_builder.tasks import load_tasks
    from kernel_reward.common.loading import unload, write_and_import
    from kernel_reward.ipc import exchange
    from kernel_reward.ipc.runner_channel import RunnerClient
    from kernel_reward.judge import remote, verdict
    from kernel_reward.judge.pipeline import start_runner_process
    from kernel_reward.judge.remote import RemoteCandidate
    from kernel_reward.options import EvalOptions
    from kernel_reward.runtime import apply_tf32_policy, mode_of
    from kernel_reward.timing import measure
    from kernel_reward.timing.spans import SpanClock

    torch_device = torch.device(device)
    options = EvalOptions(timing_budget_ms=budget_ms)
    apply_tf32_policy(options.allow_tf32)  # as the judge does: the reference and the runner under one policy
    runner = start_runner_process(mode_of(device))
    client = RunnerClient(runner)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for task in load_tasks("full", task_names):
                module = write_and_import(task.source, Path(tmp), "bench")
                arena = None
                spans = SpanClock()
                try:
                    reference = verdict.build_reference(module, "Model", torch_device, 1)
                    arena = exchange.Arena(
                        verdict._arena_bytes(torch_device, reference.state, reference.slot_bytes),
                        torch_device,
                    )
                    remote.share_arena(client, arena)
                    clock, overhead, before, *_ = measure.time_reference_before(
                        reference, arena, torch_device, options, client, [1, 2, 3], spans
                    )
                    client.ask(
                        {
                            "type": "load",
                            "code": task.source + "\n\nModelNew = Model\n",
                            "allow_tf32": options.allow_tf32,
                        },
                        ("loaded",),
                    )
                    remote.build_remote(
                        client, arena, 0, reference.build_seed, reference.init_inputs, reference.state
                    )
                    # the reference timed against itself: plain torch, no kernel of its own to require
                    candidate = RemoteCandidate(client, arena, reference.spec, 0, own_kernels_required=False)

                    timing = measure.compare_timed(clock, candidate, client, overhead, before, options)
                    rows.append(
                        {
                            "task": task.name,
                            "ref_ms": timing.reference.median_ms,
                            "cand_ms": timing.candidate.median_ms,
                            "speedup": timing.speedup,
                            "abs_log": abs(math.log(timing.speedup)),
                            "ci_low": timing.speedup_ci[0],
                            "ci_high": timing.speedup_ci[1],
                            "calls_per_batch": timing.calls_per_batch,
                            "batches": timing.candidate.num_samples,
                            **timing.overhead.to_json(),
                            "method": timing.method,
                            "reference_phase": timing.reference_phase,
                            "flags": timing.flags,
                            "diagnostics": timing.diagnostics,
                            "call_mb": (reference.input_bytes + reference.spec.nbytes) / 2**20,
                            "slot_s": dict(spans.seconds),
                        }
                    )
                except Exception as exc:  # report and keep going: one broken task must not hide the others
                    rows.append({"task": task.name, "error": f"{type(exc).__name__}: {exc}"[:300]})
                finally:
                    if arena is not None:
                        arena.close()
                    unload(module)
                    torch.cuda.empty_cache()
    finally:
        runner.close()
    return {"rows": rows, "summary": _self_speedup_summary(rows)}


def _self_speedup_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median, p95 and max |log speedup| of the tasks that were measured (the ideal self-speedup is 1)."""
    measured = [r["abs_log"] for r in rows if "abs_log" in r]
    return {
        "tasks": len(rows),
        "measured": len(measured),
        "median_abs_log_speedup": statistics.median(measured) if measured else None,
        "p95_abs_log_speedup": _percentile(measured, 95) if measured else None,
        "max_abs_log_speedup": max(measured) if measured else None,
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _evaluate(
    candidate_name: str, device: str, budget_ms: float, seed_base: int | None = None
) -> dict[str, Any]:
    from kernel_reward.judge.pipeline import evaluate_request
    from kernel_reward.options import EvalOptions
    from kernel_reward.request import EvalRequest

    task = HONEST_GPU[candidate_name]
    reference = (CORPUS_DIR.parent / "tasks" / f"{task}.py").read_text()
    candidate = (CORPUS_DIR / f"{candidate_name}.py").read_text()
    request = EvalRequest(
        reference,
        candidate,
        device=device,
        options=EvalOptions(timing_budget_ms=budget_ms, seed_base=seed_base),
    )
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        result = evaluate_request(request, work_dir=Path(tmp))
        wall = time.perf_counter() - start
    return {
        "candidate": candidate_name,
        "status": result.status.value,
        "speedup": result.speedup,
        "ci": result.speedup_ci,
        "coverage": result.coverage,
        "ref_ms": result.reference_time_ms,
        "kernel_ms": result.kernel_time_ms,
        "reward": result.reward,
        "wall_s": wall,
        "phases": result.phase_seconds,
        "flags": result.flags,
        "error": (result.error or "")[:500],
        "kernels": [(row.name, row.device_time_ms, row.from_candidate) for row in result.kernel_table[:5]],
    }


def coverage_agreement(device: str, budget_ms: float) -> dict[str, Any]:
    """Events coverage against profiler coverage on every honest corpus candidate correct on the GPU."""
    from hack_corpus import load_corpus
    from kernel_reward.judge.pipeline import evaluate_request
    from kernel_reward.options import EvalOptions
    from kernel_reward.request import EvalRequest

    rows = []
    for entry in load_corpus():
        if entry.expected_status("cuda") != "correct":
            continue
        row: dict[str, Any] = {"candidate": entry.name}
        for method in ("events", "profiler"):
            options = EvalOptions(
                timing_budget_ms=budget_ms, seed_base=7, coverage_method=method, **entry.options
            )
            with tempfile.TemporaryDirectory() as tmp:
                start = time.perf_counter()
                completion = f"```python\n{entry.source}```\n"
                result = evaluate_request(
                    EvalRequest(entry.reference, completion, device=device, options=options),
                    work_dir=Path(tmp),
                )
            row[f"{method}_status"] = result.status.value
            row[method] = result.coverage
            # the judge-clock cross-check: 1 - time without its own launches / time with them
            row[f"{method}_own_share_judge_clock"] = result.timing_method.get("diagnostics", {}).get(
                "own_share_judge_clock"
            )
            row[f"{method}_profile_s"] = result.phase_seconds.get("profile")
            row[f"{method}_flags"] = [f for f in result.flags if "profile" in f or "coverage" in f]
            row[f"{method}_wall_s"] = time.perf_counter() - start
        both = row["events"] is not None and row["profiler"] is not None
        row["abs_diff"] = abs(row["events"] - row["profiler"]) if both else None
        rows.append(row)
    diffs = [r["abs_diff"] for r in rows if r["abs_diff"] is not None]
    return {
        "rows": rows,
        "summary": {
            "candidates": len(rows),
            "compared": len(diffs),
            "max_abs_diff": max(diffs, default=None),
            "mean_abs_diff": statistics.fmean(diffs) if diffs else None,
        },
    }


def honest(device: str, budget_ms: float) -> dict[str, Any]:
    return {"rows": [_evaluate(name, device, budget_ms) for name in HONEST_GPU]}


def repeatability(device: str, budget_ms: float, repeats: int, candidate: str) -> dict[str, Any]:
    """One honest candidate evaluated ``repeats`` times, one after another, by a one-worker pool (warm judge /
    runner pairs, as in training): the coefficient of variation of its speedup."""
    from kernel_reward import Evaluator

    task = HONEST_GPU[candidate]
    reference = (CORPUS_DIR.parent / "tasks" / f"{task}.py").read_text()
    completion = f"```python\n{(CORPUS_DIR / f'{candidate}.py').read_text()}```\n"
    rows = []
    with Evaluator(device=device, workers=1, timeout=300) as evaluator:
        for _ in range(repeats):
            start = time.perf_counter()
            result = evaluator.evaluate(reference, completion, timing_budget_ms=budget_ms)
            rows.append(
                {
                    "candidate": candidate,
                    "status": result.status.value,
                    "speedup": result.speedup,
                    "ci": result.speedup_ci,
                    "ref_ms": result.reference_time_ms,
                    "kernel_ms": result.kernel_time_ms,
                    "wall_s": time.perf_counter() - start,
                    "phases": result.phase_seconds,
                    "flags": result.flags,
                    "timing_method": result.timing_method,
                }
            )
    speedups = [r["speedup"] for r in rows if r["speedup"] is not None]
    mean = statistics.fmean(speedups) if speedups else None
    cv = statistics.stdev(speedups) / mean if len(speedups) > 1 and mean else None
    return {
        "candidate": candidate,
        "rows": rows,
        "summary": {
            "repeats": repeats,
            "mean_speedup": mean,
            "cv_speedup": cv,
            "min": min(speedups, default=None),
            "max": max(speedups, default=None),
        },
    }


def phase_costs(evaluations: list[dict[str, Any]]) -> dict[str, float]:
    """Mean seconds per phase over the evaluations (the first run pays compilation; it is included)."""
    phases: dict[str, list[float]] = {}
    for row in evaluations:
        for name, seconds in (row.get("phases") or {}).items():
            phases.setdefault(name, []).append(seconds)
    return {name: statistics.fmean(values) for name, values in phases.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 1)[1],
    )
    parser.add_argument(
        "--device", default="cuda", help="CUDA device to benchmark (the reward's timing is GPU-only)"
    )
    parser.add_argument("--tasks", default="all", help="comma-separated shipped task names, or 'all'")
    parser.add_argument("--json-out", type=Path, default=None, help="write all results here as JSON")
    parser.add_argument(
        "--budget-ms",
        type=float,
        default=None,
        help="timing budget per side, ms (default: EvalOptions.timing_budget_ms, what users get)",
    )
    parser.add_argument(
        "--repeats", type=int, default=10, help="evaluations of one candidate for repeatability"
    )
    parser.add_argument(
        "--sections",
        default="fidelity,fidelity_judge,honest,repeatability",
        help="comma-separated subset of: fidelity, fidelity_judge, honest, repeatability, coverage",
    )
    parser.add_argument(
        "--throughput",
        action="store_true",
        help="instead: execution-service throughput, warm pool vs fresh process per evaluation "
        "(benchmarks/throughput.py; --workers, --baseline-count)",
    )
    parser.add_argument(
        "--workers", type=int, default=None, help="--throughput: concurrent candidates per GPU"
    )
    parser.add_argument(
        "--warm-spares",
        type=int,
        default=None,
        help="--throughput: children each slot keeps warming ahead (default: the pool's)",
    )
    parser.add_argument(
        "--gpu-timing",
        choices=["exclusive", "shared"],
        default=None,
        help="--throughput: PoolConfig.exclusive_gpu_timing: the GPU to a timing judge alone, or shared with the "
        "other judges' GPU phases (default: the pool's)",
    )
    parser.add_argument(
        "--coverage-method",
        choices=["profiler", "events"],
        default=None,
        help="--throughput: EvalOptions.coverage_method for every evaluation (default: the option's)",
    )
    parser.add_argument(
        "--launch-ledger",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="--throughput: PoolConfig.launch_ledger (CUPTI's kernel records decide coverage; the pool only); "
        "neither flag: the pool's default, on for a GPU",
    )
    parser.add_argument(
        "--baseline-count", type=int, default=5, help="--throughput: fresh-process evaluations"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="--throughput: pool passes over the pair set in one batch (steady state, not one ramp-down)",
    )
    parser.add_argument(
        "--rl-group",
        type=int,
        default=None,
        help="--throughput: RL-shaped instead: groups of this many candidates of one task, a step at a time",
    )
    parser.add_argument(
        "--target-batch-ms",
        default=None,
        help="fidelity_judge: also run it with each of these comma-separated batch targets (ms; the judge's "
        "default is measure.TARGET_BATCH_MS), which sets the calls per batch K: a self-speedup bias that shrinks "
        "as K grows is a per-batch cost (the hand-over), one that stays is a per-call cost",
    )
    parser.add_argument("--rl-prompts", type=int, default=4, help="--rl-group: tasks (groups) per step")
    parser.add_argument("--rl-steps", type=int, default=4, help="--rl-group: steps")
    parser.add_argument(
        "--rl-share-identical",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="--rl-group: judge a step's identical requests once, as the trainer's reward does (a group larger "
        "than its task's variants repeats some)",
    )
    args = parser.parse_args(argv)
    if args.budget_ms is None:
        from kernel_reward.options import EvalOptions

        args.budget_ms = EvalOptions().timing_budget_ms
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.throughput:
        from benchmarks.throughput import run_cli  # a folder of the checkout (REPO_ROOT is on sys.path)

        return run_cli(args)

    import torch

    if not args.device.startswith("cuda") or not torch.cuda.is_available():
        parser.error(
            "this benchmark needs a CUDA device (timing is not available under the Triton interpreter)"
        )
    from kernel_reward.runtime import prepare_worker

    info = prepare_worker(args.device)
    sections = set(args.sections.split(","))
    names = None if args.tasks == "all" else [n for n in args.tasks.split(",") if n]
    report: dict[str, Any] = {
        "device": info.device_name,
        "torch": torch.__version__,
        "budget_ms": args.budget_ms,
    }
    evaluations: list[dict[str, Any]] = []
    if "fidelity" in sections:
        report["fidelity"] = fidelity(names, args.device, args.budget_ms)
        print("\n== timing fidelity: reference vs itself ==")
        print(
            _table(
                report["fidelity"]["rows"],
                ["task", "ref_ms", "cand_ms", "speedup", "abs_log", "samples", "error"],
            )
        )
        print(json.dumps(report["fidelity"]["summary"], indent=2))
    if "fidelity_judge" in sections:
        report["fidelity_judge"] = fidelity_judge(names, args.device, args.budget_ms)
        print("\n== timing fidelity through the judge's clock: reference vs itself in a runner ==")
        print(
            _table(
                report["fidelity_judge"]["rows"],
                [
                    "task",
                    "ref_ms",
                    "cand_ms",
                    "speedup",
                    "abs_log",
                    "calls_per_batch",
                    "batches",
                    "reference_phase",
                    "error",
                ],
            )
        )
        print(json.dumps(report["fidelity_judge"]["summary"], indent=2))
        if args.target_batch_ms:
            report["fidelity_by_batch"] = fidelity_by_batch(
                names, args.device, args.budget_ms, [float(v) for v in args.target_batch_ms.split(",")]
            )
            print("\n== self-speedup by calls per batch (the judge's batch target varied) ==")
            print(
                _table(report["fidelity_by_batch"], ["task", "target_ms", "calls_per_batch", "speedup", "ci"])
            )
        report["slot_profile"] = profile_by_size(report["fidelity_judge"]["rows"])
        print("\n== the timing slot's steps, mean seconds per evaluation by task size (MiB per call) ==")
        print(_table(report["slot_profile"], ["step", *(c for _, c in SIZE_BOUNDS_MB)]))
    if "honest" in sections:
        report["honest"] = honest(args.device, args.budget_ms)
        evaluations += report["honest"]["rows"]
        print("\n== full evaluations of honest candidates ==")
        print(
            _table(
                report["honest"]["rows"],
                ["candidate", "status", "speedup", "coverage", "ref_ms", "kernel_ms", "reward", "wall_s"],
            )
        )
    if "repeatability" in sections:
        report["repeatability"] = repeatability(
            args.device, args.budget_ms, args.repeats, "honest_add_relu_big_gpu"
        )
        evaluations += report["repeatability"]["rows"]
        print("\n== repeatability ==")
        print(
            _table(
                report["repeatability"]["rows"],
                ["candidate", "status", "speedup", "ref_ms", "kernel_ms", "wall_s"],
            )
        )
        print(json.dumps(report["repeatability"]["summary"], indent=2))
    if "coverage" in sections:
        report["coverage"] = coverage_agreement(args.device, args.budget_ms)
        print("\n== coverage: events vs profiler ==")
        print(
            _table(
                report["coverage"]["rows"],
                ["candidate", "events", "profiler", "abs_diff", "events_profile_s", "profiler_profile_s"],
            )
        )
        print(json.dumps(report["coverage"]["summary"], indent=2))
    if evaluations:
        report["phases_mean_s"] = phase_costs(evaluations)
        print("\n== mean seconds per phase ==")
        print(
            _table(
                [{"phase": k, "seconds": v} for k, v in report["phases_mean_s"].items()], ["phase", "seconds"]
            )
        )
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
