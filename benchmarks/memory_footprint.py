"""Does a large task fit the evaluator, and where does its memory go? The judge's peak per phase beside one
call's inputs + outputs, for tasks at the sizes of KernelBench's level 1-2 problems (written here, not copied:
a 6 GiB elementwise input, a 6 GiB row softmax, a row reduction, an 8k matmul, a large convolution), each
evaluated once against a candidate that computes the same thing in PyTorch and passes its output through a
Triton copy kernel. ``--cap-gib`` caps each worker's GPU memory (72: 90 % of an 80 GB H100).
``--problems DIR``: every ``*.py`` problem file under DIR instead (a KernelBench checkout, not shipped here),
each against itself. benchmarks/README.md (memory_footprint.py) gives the targets and more examples.

    python benchmarks/memory_footprint.py --cap-gib 72 --json-out OUT.json
    python benchmarks/memory_footprint.py --cap-gib 72 --problems KernelBench/KernelBench --shard 0/4 \\
        --json-out shard0.json
    python benchmarks/memory_footprint.py --device cpu --scale 4096 --tasks relu row_sum   # a CPU smoke run
    python benchmarks/memory_footprint.py --merge A.json B.json   # one table from a sharded run's files
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

GIB = 1 << 30


@dataclass(frozen=True)
class Task:
    """A reference program: constructor body, forward body and input shapes (first dimension scaled down)."""

    init: str
    forward: str
    inputs: tuple[tuple[int, ...], ...]
    params: str = "x"


TASKS = {
    "relu": Task("pass", "return torch.relu(x)", ((16384, 98304),)),  # 6 GiB in, 6 GiB out
    "softmax": Task("pass", "return torch.softmax(x, dim=1)", ((16384, 98304),)),
    "row_sum": Task("pass", "return torch.sum(x, dim=1, keepdim=True)", ((16384, 98304),)),
    "matmul": Task("pass", "return torch.matmul(a, b)", ((8192, 8192), (8192, 8192)), params="a, b"),
    "conv2d": Task(
        "self.conv = nn.Conv2d(64, 128, 3, padding=1)", "return self.conv(x)", ((32, 64, 256, 256),)
    ),
}

REFERENCE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, {params}):
        {forward}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
"""

# A problem file's own model (renamed: the static screen rejects a candidate that uses the reference's class), its
# outputs (a tensor or a tuple / list of them) passed through a Triton copy.
WRAPPER = """

import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _through_triton(result):
    result = result.contiguous()
    out = torch.empty_like(result)
    if result.numel():
        _copy_kernel[(triton.cdiv(result.numel(), 1024),)](result, out, result.numel(), BLOCK=1024)
    return out


class ModelNew(_ProblemModel):
    def forward(self, *args):
        result = super().forward(*args)
        if isinstance(result, torch.Tensor):
            return _through_triton(result)
        return type(result)(_through_triton(r) for r in result)
"""


def problem_sources(path: Path, shrink: int | None = None) -> tuple[str, str]:
    """A problem file (``Model``, ``get_inputs``, ``get_init_inputs``) and its copy-wrapped candidate (``shrink``:
    its size constants capped first, ``shrunk``)."""
    reference = path.read_text() if shrink is None else shrunk(path.read_text(), shrink)
    if "class Model" not in reference or "def get_inputs" not in reference:
        raise ValueError(f"{path}: not a problem file (needs class Model and get_inputs)")
    return reference, wrapped(reference)


_SIZE_LINE = re.compile(
    r"^([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=\s*([0-9][0-9 ,*+/()-]*?)\s*(#.*)?$", re.M
)


def shrunk(source: str, cap: int) -> str:
    """Pure: a problem file with its module-level integer constants (``batch_size = 128``, ``M = 1024 * 2``,
    ``h, w = 64, 64``) capped at ``cap`` and every ``batch*`` name set to 2: the same problem small enough for the
    interpreter on a CPU, to sweep verdicts (an honest candidate must never read `incorrect`). Caps can break a
    problem's own constraints (channels divisible by groups): its reference then fails and is reported as such."""

    def small(name: str, value: int) -> int:
        return 2 if name.lower().startswith("batch") else min(value, cap)

    def replace(match: re.Match[str]) -> str:
        names = [name.strip() for name in match.group(1).split(",")]
        if "**" in match.group(2):  # a power could take forever to evaluate; leave it as written
            return match.group(0)
        try:
            value = eval(match.group(2), {"__builtins__": {}})  # digits and arithmetic only (the pattern)
        except (SyntaxError, ZeroDivisionError, TypeError):
            return match.group(0)
        values = value if isinstance(value, tuple) else (value,)
        if len(values) != len(names) or not all(type(v) is int for v in values):
            return match.group(0)
        return (
            f"{', '.join(names)} = {', '.join(str(small(n, v)) for n, v in zip(names, values, strict=True))}"
        )

    return _SIZE_LINE.sub(replace, source)


def wrapped(reference: str) -> str:
    """The candidate for ``reference``: its own model, outputs passed through the Triton copy (``WRAPPER``)."""
    return re.sub(r"\bModel\b", "_ProblemModel", reference) + WRAPPER


def sources(task: Task, scale: int) -> tuple[str, str, int]:
    """The reference and candidate programs at ``scale`` (first dimensions divided by it), and one call's input
    bytes (fp32)."""
    shapes = [(max(1, shape[0] // scale), *shape[1:]) for shape in task.inputs]
    inputs = ", ".join(f"torch.randn({', '.join(map(str, shape))})" for shape in shapes)
    fields = {"init": task.init, "forward": task.forward, "params": task.params}
    input_bytes = sum(4 * _count(shape) for shape in shapes)
    reference = REFERENCE.format(inputs=inputs, **fields)
    return reference, wrapped(reference), input_bytes


def _count(shape: tuple[int, ...]) -> int:
    total = 1
    for size in shape:
        total *= size
    return total


@dataclass
class Row:
    task: str
    status: str
    call_gib: float | None  # one call's inputs + outputs, as the judge measured them
    judge_peak_gib: float | None  # the largest phase peak of torch's allocator in the judge, plus the arena
    arena_gib: (
        float | None
    )  # the exchange arena: device memory outside the allocator, held from build to the end
    peak_phase: str | None
    peak_over_call: float | None
    seconds: float
    error: str | None
    phase_peaks_gib: dict[str, float]  # every phase's peak, for the JSON
    flags: list[str]
    phase_seconds: dict[str, float] = field(default_factory=dict)  # where a slow evaluation's time went
    speedup: float | None = None  # the copy-wrapped candidate against its own reference (a little under 1)
    calls_per_batch: int | None = None  # the timed batches' calls (1: the one-call staging path)


def run_task(name: str, task: Task, scale: int, device: str, cap_gib: float | None, timeout_s: float) -> Row:
    """One built-in task in its own one-worker pool."""
    reference, candidate, _ = sources(task, scale)
    with open_evaluator(device, cap_gib, timeout_s) as evaluator:
        return evaluate_pair(evaluator, name, reference, candidate)


def open_evaluator(device: str, cap_gib: float | None, timeout_s: float) -> Any:
    """A one-worker pool, its worker capped at ``cap_gib`` on a GPU (judge and runner share the cap)."""
    from kernel_reward import Evaluator

    pool_options = {}
    if cap_gib is not None and device.startswith("cuda"):
        import torch

        total = torch.cuda.get_device_properties(torch.device(device)).total_memory
        pool_options["gpu_memory_fraction"] = min(0.95, cap_gib * GIB / total)
    return Evaluator(device=device, workers=1, pool_options=pool_options, timeout=timeout_s)


def evaluate_pair(evaluator: Any, name: str, reference: str, candidate: str) -> Row:
    """One evaluation and its memory row."""
    start = time.perf_counter()
    result = evaluator.evaluate(reference, candidate, timing_budget_ms=200.0)
    seconds = time.perf_counter() - start
    peaks = result.memory.get("judge_peak_bytes") or {}
    call, arena = result.memory.get("call_bytes"), result.memory.get("arena_bytes", 0)
    phase = max(peaks, key=peaks.get) if peaks else None
    peak = peaks[phase] + arena if phase else None  # an upper bound: "load" ran before the arena existed
    return Row(
        name,
        result.status.value,
        call and call / GIB,
        peak and peak / GIB,
        arena / GIB,
        phase,
        peak / call if peak and call else None,
        round(seconds, 1),
        (result.error or "")[:300] or None,
        {name: round(value / GIB, 3) for name, value in peaks.items()},
        list(result.flags),
        {name: round(value, 2) for name, value in (result.phase_seconds or {}).items()},
        result.speedup,
        result.timing_method.get("calls_per_batch"),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    parser.add_argument(
        "--tasks", nargs="+", choices=sorted(TASKS), default=sorted(TASKS), help="tasks to run"
    )
    parser.add_argument("--scale", type=int, default=1, help="divide each input's first dimension by this")
    parser.add_argument(
        "--problems",
        type=Path,
        metavar="DIR",
        help="evaluate every *.py problem file under DIR instead of the built-in tasks",
    )
    parser.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        default=None,
        help="with --problems: only these problems, named as in the table (level1/57 or "
        "level1/57_conv_transposed_2D__square_input__square_kernel), e.g. to re-run them after a fix",
    )
    parser.add_argument(
        "--shard",
        default="0/1",
        metavar="K/N",
        help="with --problems: only every N-th file from the K-th (0-based; to split a long run)",
    )
    parser.add_argument(
        "--shrink",
        type=int,
        metavar="CAP",
        help="with --problems: cap each file's integer size constants at CAP (batch sizes at 2), "
        "for a verdict sweep on a CPU",
    )
    parser.add_argument(
        "--cap-gib", type=float, help="per-worker GPU memory cap in GiB (default: the pool's)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="per-task wall clock in seconds")
    parser.add_argument("--json-out", type=Path, help="write the rows as JSON")
    parser.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="run nothing: print the rows of earlier --json-out files (a sharded run's) as one "
        "table; a task in several files keeps its row from the last one (a re-run)",
    )
    args = parser.parse_args(argv)
    if args.scale < 1:
        parser.error(f"--scale must be >= 1, got {args.scale}")
    if args.merge:
        try:
            rows, incomplete, replaced = merged_rows(args.merge)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"--merge: {exc}")
        print_rows(rows)
        print(
            summary_line(rows)
            + (f"; incomplete runs: {', '.join(incomplete)}" if incomplete else "")
            + (f"; re-run: {', '.join(replaced)}" if replaced else "")
        )
        return 0

    from tqdm import tqdm

    if args.problems is not None:
        files = sorted(args.problems.rglob("*.py")) if args.problems.is_dir() else []
        if not files:
            parser.error(f"--problems {args.problems}: no *.py problem files there")
        try:
            shard, shards = (int(part) for part in args.shard.split("/"))
        except ValueError:
            parser.error(f"--shard must be K/N with integers, got {args.shard!r}")
        if not 0 <= shard < shards:
            parser.error(f"--shard {args.shard}: K must be in [0, N)")
        if args.only:
            try:
                files = only_named(files, args.problems, args.only)
            except ValueError as exc:
                parser.error(str(exc))
        files = files[shard::shards]
        try:
            pairs = [
                (
                    path.relative_to(args.problems).with_suffix("").as_posix(),
                    *problem_sources(path, args.shrink),
                )
                for path in files
            ]
        except ValueError as exc:
            parser.error(str(exc))
        rows = []
        with open_evaluator(args.device, args.cap_gib, args.timeout) as evaluator:
            for name, reference, candidate in tqdm(pairs, desc="problems", unit="problem"):
                rows.append(evaluate_pair(evaluator, name, reference, candidate))
                write_rows(args, rows, complete=False)
    else:
        rows = []
        for name in tqdm(args.tasks, desc="tasks", unit="task"):
            rows.append(run_task(name, TASKS[name], args.scale, args.device, args.cap_gib, args.timeout))
            write_rows(args, rows, complete=False)
    print_rows(rows)
    print(summary_line(rows))
    write_rows(args, rows, complete=True)
    return 0


def print_rows(rows: list[Row]) -> None:
    fmt = lambda v, spec: format("-", ">" + spec.split(".")[0]) if v is None else format(v, spec)  # noqa: E731
    width = max([10, *(len(row.task) for row in rows)])
    print(
        f"{'task':{width}} {'status':14} {'call GiB':>9} {'judge peak GiB':>15} {'of it arena':>11} {'phase':12} "
        f"{'peak/call':>9} {'peak/ref':>8} {'speedup':>7} {'K':>3} {'s':>7}"
    )
    for row in rows:
        print(
            f"{row.task:{width}} {row.status:14} {fmt(row.call_gib, '9.2f')} {fmt(row.judge_peak_gib, '15.2f')} "
            f"{fmt(row.arena_gib, '11.2f')} {row.peak_phase or '-':12} {fmt(row.peak_over_call, '9.2f')} "
            f"{fmt(peak_over_reference(row), '8.2f')} {fmt(row.speedup, '7.3f')} {fmt(row.calls_per_batch, '3.0f')} "
            f"{row.seconds:7.1f}"
        )
        if row.error:
            print(f"    {row.error}")


def only_named(files: list[Path], root: Path, names: list[str]) -> list[Path]:
    """Pure: the problem files (under ``root``) that ``names`` name, by their table name or its number prefix
    (``level1/57`` is ``level1/57_<anything>``); ValueError naming any name that matches no file."""

    def named(path: Path, name: str) -> bool:
        task = path.relative_to(root).with_suffix("").as_posix()
        return task == name or task.startswith(name + "_")

    unmatched = [name for name in names if not any(named(path, name) for path in files)]
    if unmatched:
        raise ValueError(f"--only: no problem file named {', '.join(unmatched)}")
    return [path for path in files if any(named(path, name) for name in names)]


def peak_over_reference(row: Row) -> float | None:
    """Pure: the judge's peak over what the reference needs on its own, the larger of one call's inputs + outputs and
    the build phase's peak (the reference's probe forward: its inputs, intermediates and outputs). A reference
    whose intermediates outgrow its call (Swish's sigmoid; a convolution reduced by a min over channels) needs
    that much under any harness; the judge's own overhead is the rest."""
    if not row.judge_peak_gib or not row.call_gib:
        return None
    return row.judge_peak_gib / max(row.call_gib, row.phase_peaks_gib.get("build", 0.0))


def summary_line(rows: list[Row]) -> str:
    """Pure: tasks per status, and the largest peak / call among calls of at least 1 GiB (below that the judge's
    fixed buffers dominate the ratio), also read against what the reference needs alone (``peak_over_reference``)."""
    counts = Counter(row.status for row in rows)
    statuses = ", ".join(f"{status} {count}" for status, count in sorted(counts.items()))
    large = [row for row in rows if row.call_gib and row.call_gib >= 1 and row.peak_over_call]
    out_of_memory = sum(
        "out_of_memory" in row.flags or "out of memory" in (row.error or "").lower() for row in rows
    )
    text = f"{len(rows)} tasks: {statuses}; out of memory (flag or error): {out_of_memory}"
    if large:
        worst = max(large, key=lambda row: row.peak_over_call)
        text += f"; largest peak/call at >= 1 GiB calls: {worst.peak_over_call:.2f} ({worst.task}, {worst.call_gib:.2f} GiB)"
        worst = max(large, key=peak_over_reference)
        text += f"; largest peak/max(call, reference alone): {peak_over_reference(worst):.2f} ({worst.task})"
    return text


def merged_rows(paths: list[Path]) -> tuple[list[Row], list[str], list[str]]:
    """The rows of several ``--json-out`` files in one list (sorted by task), the files that were not complete (a
    shard stopped by its wall-clock limit), and the tasks whose row a later file replaced, named with that file (a
    re-run of a few problems after a fix, merged over the shard that first measured them)."""
    by_task: dict[str, Row] = {}
    incomplete, replaced = [], []
    for path in paths:
        written = json.loads(path.read_text())
        for row in (Row(**row) for row in written["rows"]):
            if row.task in by_task:
                replaced.append(f"{row.task} ({path})")
            by_task[row.task] = row
        if not written["meta"].get("complete", True):
            incomplete.append(str(path))
    return sorted(by_task.values(), key=lambda row: row.task), incomplete, replaced


def write_rows(args: argparse.Namespace, rows: list[Row], complete: bool) -> None:
    """The rows so far as JSON, replaced atomically after every task: a run stopped by a wall-clock limit keeps what
    it measured, marked ``"complete": false``."""
    if not args.json_out:
        return
    args.json_out.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "device": args.device,
        "scale": args.scale,
        "cap_gib": args.cap_gib,
        "problems": str(args.problems) if args.problems else None,
        "shard": args.shard,
        "complete": complete,
    }
    partial = args.json_out.with_name(args.json_out.name + ".partial")
    partial.write_text(json.dumps({"meta": meta, "rows": [asdict(r) for r in rows]}, indent=1) + "\n")
    partial.replace(args.json_out)


if __name__ == "__main__":
    raise SystemExit(main())
