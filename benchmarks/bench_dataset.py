"""Benchmark the dataset builder at the size of hkust-nlp/drkernel-rl-data (72k rows).

Synthesises upstream-like rows (Parquet, `ops` as a JSON string; reference lengths around a 734-character
median, prompts a ~3.6k-character template plus the reference, as background §1 measures), then times:

    build          python -m dataset_builder build --format drkernel (convert, check, write zstd shards, card)
    first_load     datasets.load_dataset(DIR) into an empty cache
    cached_reload  the same call again (served from the Arrow cache)
    streaming      one pass over load_dataset(DIR, streaming=True)

Peak memory is the largest sum of proportional set size (PSS, or RSS where PSS is unavailable) over this
process and its children, sampled every 0.1 s during each phase. Prints a table and writes JSON.

    .venv/bin/python benchmarks/bench_dataset.py --rows 72000 --num-proc 2 --json out/bench_dataset.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

TARGETS = {"build_s": 60.0, "first_load_s": 10.0, "cached_reload_s": 0.5, "peak_mem_gb": 3.0}

OPS = [
    ("torch.relu", "x = torch.relu(x)"),
    ("torch.tanh", "x = torch.tanh(x)"),
    ("torch.sigmoid", "x = torch.sigmoid(x)"),
    ("torch.abs", "x = torch.abs(x)"),
    ("torch.exp", "x = torch.exp(-x.abs())"),
    ("torch.softmax", "x = torch.softmax(x, dim=-1)"),
    ("torch.clamp", "x = torch.clamp(x, min={a}, max={b})"),
    ("torch.mul", "x = x * {a}"),
    ("torch.add", "x = x + {a}"),
    ("nn.functional.gelu", "x = nn.functional.gelu(x)"),
    ("torch.cumsum", "x = torch.cumsum(x, dim=1)"),
    ("torch.mean", "x = x - x.mean(dim=-1, keepdim=True)"),
]
PROMPT_HEAD = (
    "You write custom Triton kernels to replace the PyTorch operators in the given architecture and get speedups. "
) * 30  # ~3.4k characters: stands in for the fixed part of the upstream prompt (the same in every row)
CUDA_HEAD = "You write custom CUDA kernels (torch.utils.cpp_extension.load_inline) to get speedups. " * 38
WORDS = (
    "tensor kernel block tile warp shared memory fused reduce scale bias norm layer conv pool stride "
    "channel batch input output weight grad cache launch grid thread index offset mask load store"
).split()
PROMPT_TAIL = (
    "\nOptimize the architecture named Model with custom Triton operators; name the result ModelNew.\n"
)


def synth_reference(rng: random.Random, index: int) -> tuple[str, list[str]]:
    """A distinct, parseable KernelBench-style program; lengths roughly lognormal around 734 characters."""
    target = min(4400, max(240, int(rng.lognormvariate(6.6, 0.33))))
    chosen = rng.sample(OPS, rng.randint(1, 4))
    body = "\n".join(
        "        " + line.format(a=round(rng.uniform(0.1, 2.0), 3), b=round(rng.uniform(2.0, 6.0), 3))
        for _, line in chosen
    )
    head = f'"""Synthetic task {index}: {", ".join(op for op, _ in chosen)}."""\nimport torch\nimport torch.nn as nn\n\n'
    constants = f"batch_size = {rng.randint(8, 512)}\ndim = {rng.choice([256, 512, 1024, 4096])}\nseed_tag = {index}\n"
    program = (
        f"{head}\nclass Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        f"    def forward(self, x):\n{body}\n        return x\n\n\n{constants}\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, dim)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    filler = target - len(program)
    while (
        filler > 0
    ):  # comments of random words pad to the target length (not part of the normalised program)
        line = "# " + " ".join(rng.choices(WORDS, k=10)) + "\n"
        program += line
        filler -= len(line)
    return program, [op for op, _ in chosen]


def synth_upstream(path: Path, rows: int, seed: int, row_group: int = 1000) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    writer = None
    for start in range(0, rows, row_group):
        batch = []
        for index in range(start, min(rows, start + row_group)):
            ref, ops = synth_reference(rng, index)
            batch.append(
                {
                    "data_source": "cuda_llm",
                    "prompt": [
                        {"role": "user", "content": f"{PROMPT_HEAD}\n```python\n{ref}\n```{PROMPT_TAIL}"}
                    ],
                    "ability": "kernel_optimization",
                    "reward_model": {"style": "rule", "ground_truth": ref},
                    "extra_info": {
                        "entry_point": "Model",
                        "level": "0",
                        "module_name": f"module_{index}",
                        "ops": json.dumps(ops),
                        "original_prompt": [
                            {"role": "user", "content": f"{CUDA_HEAD}\n```python\n{ref}\n```{PROMPT_TAIL}"}
                        ],
                        "repo_name": "synthetic",
                        "type": "nn_module",
                        "uuid": f"cuda_llm_{index}",
                    },
                }
            )
        table = pa.Table.from_pylist(batch)
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="zstd")
        writer.write_table(table, row_group_size=row_group)
    writer.close()


def _process_tree_memory_bytes(root_pid: int) -> int:
    """Sum of PSS (else RSS) over root_pid and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        total += _pss_bytes(pid)
    return total


def _pss_bytes(pid: int) -> int:
    for name, key in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(name) as fh:
                for line in fh:
                    if line.startswith(key):
                        return int(line.split()[1]) * 1024
        except OSError:
            continue
    return 0


@contextmanager
def measured(results: dict, name: str):
    """Time a phase and record its peak memory (sampled every 0.1 s)."""
    peak = [_process_tree_memory_bytes(os.getpid())]
    stop = threading.Event()

    def sample():
        while not stop.wait(0.1):
            peak[0] = max(peak[0], _process_tree_memory_bytes(os.getpid()))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    try:
        yield
    finally:
        results[f"{name}_s"] = round(time.perf_counter() - started, 3)
        stop.set()
        sampler.join()
        results[f"{name}_peak_mem_gb"] = round(peak[0] / 1e9, 3)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=72_000, help="rows to synthesise (default 72000)")
    parser.add_argument("--num-proc", type=int, default=2, help="builder worker processes (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", help="keep the synthetic source and outputs here (default: a temp dir)")
    parser.add_argument("--json", default="out/bench_dataset.json", help="where to write the results JSON")
    args = parser.parse_args()

    import logging

    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datasets

    from dataset_builder import FEATURES, build_dataset

    datasets.disable_progress_bars()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-dataset-"))
    work.mkdir(parents=True, exist_ok=True)
    source, out, cache = work / "upstream.parquet", work / "dataset", work / "hf-cache"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)

    started = time.perf_counter()
    synth_upstream(source, args.rows, args.seed)
    results: dict = {
        "rows": args.rows,
        "num_proc": args.num_proc,
        "synth_s": round(time.perf_counter() - started, 1),
    }
    results["source_mb"] = round(source.stat().st_size / 1e6, 1)

    with measured(results, "build"):
        report = build_dataset(str(source), "drkernel", out, num_proc=args.num_proc)
    results.update(rows_kept=report.rows_kept, dropped=report.dropped_by_reason(), shards=len(report.shards))
    results["build_phase_s"] = report.phase_seconds
    results["output_mb"] = round(sum(f.stat().st_size for f in (out / "data").glob("*.parquet")) / 1e6, 1)

    with measured(results, "first_load"):
        ds = datasets.load_dataset(str(out), split="train", cache_dir=str(cache))
    assert ds.features == FEATURES and ds.num_rows == report.rows_kept, (
        "loaded dataset does not match the build"
    )
    del ds
    with measured(results, "cached_reload"):
        ds = datasets.load_dataset(str(out), split="train", cache_dir=str(cache))
    del ds
    with measured(results, "streaming"):
        streamed = sum(1 for _ in datasets.load_dataset(str(out), split="train", streaming=True))
    assert streamed == report.rows_kept, f"streaming saw {streamed} rows, expected {report.rows_kept}"

    results["peak_mem_gb"] = max(v for k, v in results.items() if k.endswith("_peak_mem_gb"))
    results["machine"] = f"{platform.node()} ({os.cpu_count()} CPUs, Python {platform.python_version()})"
    rows = [
        ("build (convert + check + write)", results["build_s"], TARGETS["build_s"], "s"),
        ("first load", results["first_load_s"], TARGETS["first_load_s"], "s"),
        ("cached reload", results["cached_reload_s"], TARGETS["cached_reload_s"], "s"),
        ("streaming pass", results["streaming_s"], None, "s"),
        ("peak memory (PSS, all processes)", results["peak_mem_gb"], TARGETS["peak_mem_gb"], "GB"),
    ]
    print(
        f"{args.rows} rows synthesised in {results['synth_s']} s ({results['source_mb']} MB Parquet); "
        f"kept {results['rows_kept']} in {results['shards']} shards ({results['output_mb']} MB)"
    )
    print("build phases (s): " + ", ".join(f"{k} {v}" for k, v in report.phase_seconds.items()))
    print(f"{'phase':<36}{'measured':>10}{'target':>10}  ok")
    for name, value, target, unit in rows:
        ok = "-" if target is None else ("yes" if value <= target else "NO")
        print(f"{name:<36}{value:>9.3f}{unit:<1}{'' if target is None else f'{target:>9}{unit}':>10}  {ok}")
    results["targets"] = TARGETS
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"wrote {args.json}")
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
