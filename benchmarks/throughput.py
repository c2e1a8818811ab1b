"""Throughput benchmark of the execution service (``benchmarks/bench_reward.py --throughput``).

Builds candidate/task pairs on the shipped task set: for each elementwise task an honest Triton kernel at three
block sizes, a wrong-result kernel, a syntax error, a raising forward, a torch passthrough and a decoy. ``pool``:
every pair through ``Evaluator`` (warm zygote pool, full isolation); ``baseline``: a sample of them, serially, one
fresh ``python -m kernel_reward.judge.pipeline`` process each (the published environment's default). Reports the
pool's speed-up over the baseline, seconds per pipeline phase, the timing slot's busy share and the GPU idle
fraction sampled with NVML (when available).

RL-shaped (``--rl-group G``): the pool gets what a GRPO step sends, one step at a time: P tasks, each with a group
of G candidates of that task (honest kernels and the failure modes in a fixed mix), and the next step only after
every evaluation of this one returned. No fresh-process baseline is run for it. As the trainer's reward does, it
judges a step's identical requests once (``--no-rl-share-identical``: each on its own): a group larger than its
task's variants repeats some, and the report gives requests and evaluations a minute apart.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("benchmarks.throughput")

# task name -> (Triton expression of x and params p0/p1, torch expression for the passthrough hack)
ELEMENTWISE = {
    "activation_elu": (
        "tl.where(x > 0, x, p0 * (tl.exp(x) - 1.0))",
        "torch.nn.functional.elu(x, alpha=self.p[0])",
    ),
    "activation_silu": ("x / (1.0 + tl.exp(-x))", "torch.nn.functional.silu(x)"),
    "activation_leaky_relu": ("tl.where(x > 0, x, x * p0)", "torch.nn.functional.leaky_relu(x, self.p[0])"),
    "activation_hardswish": (
        "x * tl.minimum(tl.maximum(x + 3.0, 0.0), 6.0) / 6.0",
        "torch.nn.functional.hardswish(x)",
    ),
    "activation_softplus": (
        "tl.where(x * p0 > p1, x, tl.log(1.0 + tl.exp(x * p0)) / p0)",
        "torch.nn.functional.softplus(x, self.p[0], self.p[1])",
    ),
    "activation_mish": (
        "x * (1.0 - 2.0 / (tl.exp(2.0 * tl.where(x > 20.0, x, tl.log(1.0 + tl.exp(x)))) + 1.0))",
        "torch.nn.functional.mish(x)",
    ),
    "activation_gelu_fp16": (  # tanh form of the exact GELU: within the fp16 tolerance (1e-2)
        "0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x)) + 1.0))",
        "torch.nn.functional.gelu(x)",
    ),
    "elementwise_gelu_scale": (
        "0.5 * x * (2.0 - 2.0 / (tl.exp(2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x)) + 1.0)) * p0",
        "torch.nn.functional.gelu(x, approximate='tanh') * self.p[0]",
    ),
}

TEMPLATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def act_kernel(x_ptr, out_ptr, n, p0, p1, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = {expr}
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args):
        super().__init__()
        self.p = [float(a) for a in args] + [0.0, 0.0]

    def forward(self, x):
{body}
"""

LAUNCH = """        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        act_kernel[(triton.cdiv(n, {block}),)](x, out, n, self.p[0], self.p[1], BLOCK={block})
        return out"""


def candidates_for(task: str) -> list[tuple[str, str, str]]:
    """(variant, expected status, completion) for one elementwise task."""
    expr, torch_expr = ELEMENTWISE[task]
    honest = [
        (f"honest_b{b}", "correct", TEMPLATE.format(expr=expr, body=LAUNCH.format(block=b)))
        for b in (512, 1024, 2048)
    ]
    wrong = TEMPLATE.format(expr=f"({expr}) * 1.01 + 0.01", body=LAUNCH.format(block=1024))
    syntax = TEMPLATE.format(expr=expr, body=LAUNCH.format(block=1024)).replace(
        "def forward(self, x):", "def forward(self, x)"
    )
    raising = TEMPLATE.format(expr=expr, body="        raise RuntimeError('not implemented yet')")
    passthrough = TEMPLATE.format(expr=expr, body=f"        return {torch_expr}")
    decoy_body = (
        "        dummy = torch.zeros(16, device=x.device, dtype=x.dtype)\n"
        "        act_kernel[(1,)](dummy, torch.empty_like(dummy), 16, self.p[0], self.p[1], BLOCK=16)\n"
        f"        return {torch_expr}"
    )
    decoy = TEMPLATE.format(expr=expr, body=decoy_body)
    faulty = [
        ("wrong", "incorrect", wrong),
        ("syntax", "compile_error", syntax),
        ("raises", "runtime_error", raising),
        ("passthrough", "hacked", passthrough),
        ("decoy", "hacked", decoy),
    ]
    return [(v, s, f"```python\n{code}\n```") for v, s, code in honest + faulty]


def build_pairs(preset: str = "full") -> list[dict[str, Any]]:
    from dataset_builder.tasks import load_tasks

    tasks = {t.name: t for t in load_tasks(preset, names=list(ELEMENTWISE))}
    pairs = []
    for name in ELEMENTWISE:
        for variant, expected, completion in candidates_for(name):
            pairs.append(
                {
                    "task": name,
                    "variant": variant,
                    "expected": expected,
                    "reference": tasks[name].source,
                    "candidate": completion,
                }
            )
    return pairs


def build_rl_steps(
    group_size: int, prompts_per_step: int, steps: int, preset: str = "full", seed: int = 0
) -> list[list[dict[str, Any]]]:
    """``steps`` lists of ``prompts_per_step`` groups of ``group_size`` pairs, each group one task's candidates drawn
    from its variants (every variant once before any repeats, in a seeded order), the tasks taken in turn. A group
    arrives whole and contiguous, as a GRPO step's completions of one prompt do."""
    import random

    if min(group_size, prompts_per_step, steps) < 1:
        raise ValueError(
            f"group size, prompts per step and steps must be >= 1, got {group_size}, {prompts_per_step}, {steps}"
        )
    by_task: dict[str, list[dict[str, Any]]] = {}
    for pair in build_pairs(preset):
        by_task.setdefault(pair["task"], []).append(pair)
    rng = random.Random(seed)
    tasks = list(by_task)
    out: list[list[dict[str, Any]]] = []
    for step in range(steps):
        batch = []
        for prompt in range(prompts_per_step):
            variants = by_task[tasks[(step * prompts_per_step + prompt) % len(tasks)]]
            group: list[dict[str, Any]] = []
            while len(group) < group_size:
                group += rng.sample(variants, len(variants))
            batch += group[:group_size]
        out.append(batch)
    return out


class GpuSampler:
    """Samples GPU utilisation through NVML every ``period_s`` while running (None values when unavailable)."""

    def __init__(self, index: int = 0, period_s: float = 0.05) -> None:
        self.samples: list[int] = []
        self.period_s = period_s
        self.stop = threading.Event()
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        except Exception:  # noqa: BLE001 - no NVML: report idle fraction as unknown
            self.nvml = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(self.period_s):
            self.samples.append(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)

    def __enter__(self) -> GpuSampler:
        if self.nvml is not None:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.nvml is not None:
            self.thread.join()

    def idle_fraction(self) -> float | None:
        return sum(1 for s in self.samples if s == 0) / len(self.samples) if self.samples else None


def read_cpu_times(stat: Path = Path("/proc/stat")) -> list[int] | None:
    """The host's CPU times summed over cores (``/proc/stat``'s ``cpu`` line, in ticks); None where there is
    none."""
    try:
        fields = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    return [int(x) for x in fields[1:9]] if fields[:1] == ["cpu"] and len(fields) >= 9 else None


def cpu_busy_fraction(before: list[int] | None, after: list[int] | None) -> float | None:
    """Pure: the share of all cores' time between two ``read_cpu_times`` readings that was not idle or waiting
    for I/O (fields: user nice system idle iowait irq softirq steal); None without two readings or time between."""
    if before is None or after is None:
        return None
    delta = [a - b for a, b in zip(after, before, strict=True)]
    total = sum(delta)
    return 1.0 - (delta[3] + delta[4]) / total if total > 0 else None


def lock_budget(results: list[Any]) -> dict[str, float]:
    """Pure: the GPU lock's waits and holds per judged evaluation, an evaluation without a span counting 0 (so the
    numbers add up to a per-evaluation budget, unlike the phase means), beside the judge's total."""
    from kernel_reward.service.gpu_lock import LOCK_SPANS, SHARED_LONGEST

    if not results:
        return {}
    # a longest hold is a maximum, not a share of the evaluation's time
    names = [*(span for span in LOCK_SPANS if span != SHARED_LONGEST), "total"]
    return {name: sum(r.phase_seconds.get(name, 0.0) for r in results) / len(results) for name in names}


def run_pool(
    pairs: list[dict[str, Any]],
    device: str,
    workers: int | None,
    timeout_s: float,
    warm_spares: int | None = None,
    step_size: int | None = None,
    gpu_timing: str | None = None,
    launch_ledger: bool | None = None,
    share_identical: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """Every pair through one warm pool. ``step_size``: hand them over that many at a time, each batch only once the
    previous one has returned (RL steps); None: all at once. ``launch_ledger``: PoolConfig.launch_ledger (None: the
    pool's default, on for a GPU). ``share_identical``: a batch's identical pairs judged once
    (``Evaluator.evaluate_many``); "evaluations" then counts the judged ones, "requests" every pair."""
    from kernel_reward.evaluator import Evaluator, is_shared
    from kernel_reward.service.config import PoolConfig

    start = time.monotonic()
    pool_options: dict[str, Any] = {"warm_spares": warm_spares} if warm_spares else {}
    if gpu_timing is not None:  # PoolConfig.exclusive_gpu_timing: "exclusive" or "shared"
        pool_options["exclusive_gpu_timing"] = gpu_timing == "exclusive"
    if launch_ledger is not None:
        pool_options["launch_ledger"] = launch_ledger
    ledger_ran = PoolConfig(device=device, launch_ledger=launch_ledger).runs_launch_ledger
    with Evaluator(
        device=device,
        workers=workers,
        timeout=timeout_s,
        progress=False,
        pool_options=pool_options or None,
        **options,
    ) as ev:
        pools = ev.backend.pools
        for pool in pools:
            pool.zygote.wait_started(600)
        # Let every slot's first child finish warming: start-up is a one-off cost, reported separately.
        ev.evaluate(pairs[0]["reference"], pairs[0]["candidate"])
        startup_s = time.monotonic() - start
        with GpuSampler() as sampler:
            cpu_before = read_cpu_times()
            t0 = time.monotonic()
            size = step_size or len(pairs)
            results, step_s = [], []
            for first in range(0, len(pairs), size):
                started = time.monotonic()
                results += ev.evaluate_many(
                    [(p["reference"], p["candidate"]) for p in pairs[first : first + size]],
                    share_identical=share_identical,
                )
                step_s.append(time.monotonic() - started)
            wall_s = time.monotonic() - t0
            cpu_busy = cpu_busy_fraction(cpu_before, read_cpu_times())
        workers_used = sum(pool.config.workers for pool in pools)
        spares = pools[0].config.warm_spares
    phases: dict[str, list[float]] = {}
    for result in results:
        for name, seconds in result.phase_seconds.items():
            phases.setdefault(name, []).append(seconds)
    from kernel_reward.options import EvalOptions

    # What runs in the GPU's exclusive timing slot: timing and, by the options, the coverage pass.
    in_slot = ["timing"] + (["profile"] if EvalOptions(**options).coverage_in_timing_slot else [])
    slot_s = sum(r.phase_seconds.get(phase, 0.0) for r in results for phase in in_slot)
    rows = [
        {
            "task": p["task"],
            "variant": p["variant"],
            "expected": p["expected"],
            "status": r.status.value,
            "speedup": r.speedup,
            "coverage": r.coverage,
            "attempts": r.attempts,
            "isolation": r.isolation.get("level"),
            "error": (r.error or "")[:300],
            "flags": r.flags[:6],
            "kernel_rows": len(r.kernel_table),
            "phases": r.phase_seconds,
        }
        for p, r in zip(pairs, results, strict=True)
    ]
    judged = [r for r in results if not is_shared(r)]
    return {
        "requests": len(results),
        "evaluations": len(judged),
        "share_identical": share_identical,
        "wall_s": wall_s,
        "startup_s": startup_s,
        "workers": workers_used,
        "warm_spares": spares,
        "exclusive_gpu_timing": pools[0].config.exclusive_gpu_timing,
        "evals_per_min": 60 * len(judged) / wall_s,
        "requests_per_min": 60 * len(results) / wall_s,
        "step_s": step_s,
        # over the evaluations that reached each phase (a failed one has no timing spans)
        "phase_mean_s": {k: statistics.fmean(v) for k, v in sorted(phases.items())},
        "lock_per_evaluation_s": lock_budget(judged),
        "timing_slot_busy_fraction": slot_s / wall_s,
        "gpu_idle_fraction": sampler.idle_fraction(),
        "gpu_samples": len(sampler.samples),
        # Every judge, runner and warming child shares the host's cores: near 1.0 the CPU bounds the pool.
        "host_cpu_busy_fraction": cpu_busy,
        "host_cpus": os.cpu_count(),
        "isolation_levels": sorted({row["isolation"] for row in rows if row["isolation"]}),
        "matches_expected": sum(row["status"] == row["expected"] for row in rows),
        "launch_ledger": ledger_ran,
        # correct results whose coverage came from the ledger's records (the rest: the runner's pass, flagged)
        "coverage_from_launch_ledger": sum("coverage_from_launch_ledger" in r.flags for r in results),
        # windows whose records the judge's batch spans could not all place (records off the spans, or none inside)
        **ledger_span_counts(results),
        "correct": sum(r.status.value == "correct" for r in results),
        "rows": rows,
    }


def stratified_sample(pairs: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` pairs cycling through the expected statuses, so the baseline sees the same mix as the pool."""
    by_status: dict[str, list[dict[str, Any]]] = {}
    for pair in pairs:
        by_status.setdefault(pair["expected"], []).append(pair)
    queues = [list(group) for group in by_status.values()]
    chosen: list[dict[str, Any]] = []
    while len(chosen) < count and any(queues):
        for group in queues:
            if group and len(chosen) < count:
                chosen.append(group.pop(0))
    return chosen


def run_baseline(
    pairs: list[dict[str, Any]], device: str, timeout_s: float, **options: Any
) -> dict[str, Any]:
    """Fresh process per evaluation, serially: ``python -m kernel_reward.judge.pipeline --request --out``."""
    from kernel_reward.options import EvalOptions
    from kernel_reward.request import EvalRequest

    rows = []
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for i, pair in enumerate(pairs):
            request = EvalRequest(
                pair["reference"],
                pair["candidate"],
                device=device,
                options=EvalOptions(timeout_s=timeout_s, **options),
            )
            req_path, out_path = Path(tmp) / f"req{i}.json", Path(tmp) / f"out{i}.json"
            req_path.write_text(request.to_json())
            start = time.monotonic()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "kernel_reward.judge.pipeline",
                    "--request",
                    str(req_path),
                    "--out",
                    str(out_path),
                ],
                env=env,
                capture_output=True,
                timeout=timeout_s + 60,
            )
            result = (
                json.loads(out_path.read_text())
                if out_path.exists()
                else {"status": f"exit {proc.returncode}"}
            )
            rows.append(
                {
                    "task": pair["task"],
                    "variant": pair["variant"],
                    "expected": pair["expected"],
                    "status": result["status"],
                    "coverage": result.get("coverage"),
                    "phases": result.get("phase_seconds"),
                    "seconds": time.monotonic() - start,
                }
            )
    wall_s = time.monotonic() - t0
    return {
        "evaluations": len(rows),
        "wall_s": wall_s,
        "evals_per_min": 60 * len(rows) / wall_s,
        "rows": rows,
    }


def throughput(
    device: str = "cuda",
    workers: int | None = None,
    baseline_count: int = 5,
    timeout_s: float = 120.0,
    preset: str = "full",
    warm_spares: int | None = None,
    rounds: int = 1,
    gpu_timing: str | None = None,
    launch_ledger: bool | None = None,
    **options: Any,
) -> dict[str, Any]:
    """``options``: EvalOptions fields for every evaluation, pool and baseline alike (e.g. coverage_method).
    ``rounds``: the pool evaluates the whole pair set this many times in one batch, so the figure is the
    steady state rather than one batch's ramp-down (the last slow candidates running while other slots idle)."""
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    pairs = build_pairs(preset)
    pool = run_pool(
        pairs * rounds,
        "cuda:0" if device == "cuda" else device,
        workers,
        timeout_s,
        warm_spares,
        gpu_timing=gpu_timing,
        launch_ledger=launch_ledger,
        **options,
    )
    baseline = (  # fresh processes without the ledger: the peers' way
        run_baseline(stratified_sample(pairs, baseline_count), device, timeout_s, **options)
        if baseline_count
        else None
    )
    estimate = None
    if baseline:
        # Serial fresh-process time of the WHOLE set, estimated from the sample: each pair costs the mean time of
        # the sampled pairs with its expected status (the classes differ a lot: a syntax error never imports torch).
        by_status: dict[str, list[float]] = {}
        for row in baseline["rows"]:
            by_status.setdefault(row["expected"], []).append(row["seconds"])
        overall = statistics.fmean(r["seconds"] for r in baseline["rows"])
        total_s = sum(statistics.fmean(by_status.get(p["expected"], [overall])) for p in pairs)
        estimate = 60 * len(pairs) / total_s
    summary = {
        "pairs": len(pairs),
        "rounds": rounds,
        "device": device,
        "pool_evals_per_min": pool["evals_per_min"],
        "baseline_sample_evals_per_min": baseline["evals_per_min"] if baseline else None,
        "baseline_evals_per_min": estimate,
        "speedup_vs_baseline": pool["evals_per_min"] / estimate if estimate else None,
        "launch_ledger": launch_ledger,
        "options": options,
    }
    return {"summary": summary, "pool": pool, "baseline": baseline}


def rl_throughput(
    device: str = "cuda",
    workers: int | None = None,
    group_size: int = 8,
    prompts_per_step: int = 4,
    steps: int = 4,
    timeout_s: float = 120.0,
    preset: str = "full",
    warm_spares: int | None = None,
    gpu_timing: str | None = None,
    launch_ledger: bool | None = None,
    share_identical: bool = True,
    **options: Any,
) -> dict[str, Any]:
    """The RL-shaped run (see the module docstring): ``steps`` steps of ``prompts_per_step`` x ``group_size``."""
    batches = build_rl_steps(group_size, prompts_per_step, steps, preset)
    pairs = [pair for batch in batches for pair in batch]
    pool = run_pool(
        pairs,
        "cuda:0" if device == "cuda" else device,
        workers,
        timeout_s,
        warm_spares,
        step_size=group_size * prompts_per_step,
        gpu_timing=gpu_timing,
        launch_ledger=launch_ledger,
        share_identical=share_identical,
        **options,
    )
    summary = {
        "pairs": len(pairs),
        "rl_shape": {"group_size": group_size, "prompts_per_step": prompts_per_step, "steps": steps},
        "device": device,
        "pool_evals_per_min": pool["evals_per_min"],
        "pool_requests_per_min": pool["requests_per_min"],
        "options": options,
    }
    return {"summary": summary, "pool": pool, "baseline": None}


def format_report(report: dict[str, Any]) -> str:
    s, pool = report["summary"], report["pool"]
    if "rl_shape" in s:
        shape = s["rl_shape"]
        steps = ", ".join(f"{x:.1f}" for x in pool["step_s"])
        lines = [
            f"RL-shaped on {s['device']}: {shape['steps']} steps of {shape['prompts_per_step']} tasks x "
            f"{shape['group_size']} candidates: pool {s['pool_evals_per_min']:.1f} eval/min ({pool['workers']} "
            f"workers, start-up {pool['startup_s']:.1f} s, wall {pool['wall_s']:.1f} s; step walls {steps} s)",
            f"requests {pool['requests']} ({s['pool_requests_per_min']:.1f} a minute), judged {pool['evaluations']}; "
            f"identical requests of a step {'judged once' if pool['share_identical'] else 'each judged'}",
        ]
        return "\n".join(lines + _pool_lines(report))
    lines = [
        f"pairs {s['pairs']} x {s.get('rounds', 1)} round(s) on {s['device']}: pool {s['pool_evals_per_min']:.1f} eval/min "
        f"({pool['workers']} workers, {pool['warm_spares']} warm spare(s) each, start-up {pool['startup_s']:.1f} s, "
        f"wall {pool['wall_s']:.1f} s)",
    ]
    if report["baseline"]:
        lines.append(
            f"baseline (fresh process each, serial): {report['baseline']['evaluations']} sampled evals ran at "
            f"{s['baseline_sample_evals_per_min']:.1f} eval/min; whole set estimated at "
            f"{s['baseline_evals_per_min']:.1f} eval/min -> pool is {s['speedup_vs_baseline']:.1f}x"
        )
    return "\n".join(lines + _pool_lines(report))


def _pool_lines(report: dict[str, Any]) -> list[str]:
    """Statuses, isolation, the slot's busy share, the options and the phase table (both kinds of run)."""
    pool = report["pool"]
    lines = [
        f"statuses as expected: {pool['matches_expected']}/{pool['requests']}; isolation "
        f"{pool['isolation_levels']}; timing slot busy {pool['timing_slot_busy_fraction']:.2f} of wall; "
        f"GPU idle fraction {pool['gpu_idle_fraction']}; host CPU busy {pool.get('host_cpu_busy_fraction')} "
        f"of {pool.get('host_cpus')} cores; GPU while timing: "
        f"{'exclusive' if pool.get('exclusive_gpu_timing') else 'shared'}",
        f"options: {report['summary'].get('options') or 'defaults'}; launch ledger: "
        + (
            f"on, coverage from it in {pool['coverage_from_launch_ledger']} of {pool['correct']} correct; "
            f"windows with records off the batch spans {pool.get('ledger_off_span')}, unanchored "
            f"{pool.get('ledger_unanchored')}"
            if pool.get("launch_ledger")
            else "off"
        ),
        "per evaluation, zeros counted: "
        + ", ".join(
            f"{name} {seconds:.3f} s" for name, seconds in pool.get("lock_per_evaluation_s", {}).items()
        ),
        "phase                  mean s",
    ]
    return lines + [f"{name:<22} {seconds:.4f}" for name, seconds in pool["phase_mean_s"].items()]


def run_cli(args: Any) -> int:
    """Entry point used by ``benchmarks/bench_reward.py --throughput`` (args: device, workers, baseline_count,
    rl_group, rl_prompts, rl_steps, json_out)."""
    device = "cuda" if args.device.startswith("cuda") else "cpu"
    preset = "full" if device == "cuda" else "small"  # the CPU interpreter refuses the shipped sizes up front
    options = {"coverage_method": args.coverage_method} if args.coverage_method else {}
    common = {
        "device": device,
        "workers": args.workers,
        "preset": preset,
        "warm_spares": args.warm_spares,
        "gpu_timing": getattr(args, "gpu_timing", None),
        "launch_ledger": getattr(args, "launch_ledger", None),
        **options,
    }
    if getattr(args, "rl_group", None):
        report = rl_throughput(
            group_size=args.rl_group,
            prompts_per_step=args.rl_prompts,
            steps=args.rl_steps,
            share_identical=getattr(args, "rl_share_identical", True),
            **common,
        )
    else:
        report = throughput(baseline_count=args.baseline_count, rounds=args.rounds, **common)
    print(format_report(report))
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(report, indent=2, default=str))
    return 0


def ledger_span_counts(results: list) -> dict[str, int]:
    """Pure: how many results' ledger windows had records outside the judge's batch spans, and how many could not
    be tied to the spans at all (flags ``launch_ledger_off_span`` / ``launch_ledger_unanchored``)."""
    return {
        f"ledger_{kind}": sum(
            any(flag.startswith(f"launch_ledger_{kind}") for flag in r.flags) for r in results
        )
        for kind in ("off_span", "unanchored")
    }
