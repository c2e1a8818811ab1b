"""How long CUDA context creation takes when N processes create one at the same time (the pool's warm-up).

Each of N processes, started together, times ``torch.cuda.init(); torch.zeros(1, device="cuda")`` plus a
synchronise: the work a pool child does to get a CUDA context. If the driver serialises context creation, the
wall time of the whole round grows linearly with N and each process's own time with its place in the queue; the
pool then creates at most 1 / (per-context time) contexts per second, whatever its number of workers.

    python benchmarks/context_probe.py --counts 1,8,16 --json-out OUT.json
    CUDA_DEVICE_MAX_CONNECTIONS=1 python benchmarks/context_probe.py ...   (environment variants)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CHILD = """
import time, sys
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
torch.cuda.init()
torch.zeros(1, device="cuda")
torch.cuda.synchronize()
t2 = time.perf_counter()
print(f"{t1 - t0:.4f} {t2 - t1:.4f}")
"""


def one_round(count: int, env: dict[str, str]) -> dict[str, float]:
    """Start ``count`` processes at once; their import and context times, and the round's wall time (s)."""
    start = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(count)
    ]
    outputs = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - start
    if any(p.returncode for p in procs):
        raise RuntimeError(f"a probe process failed: {[p.returncode for p in procs]}")
    contexts = [float(o.split()[1]) for o in outputs]
    return {
        "processes": count,
        "wall_s": wall,
        "context_median_s": statistics.median(contexts),
        "context_max_s": max(contexts),
        "context_min_s": min(contexts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--counts", default="1,8,16", help="comma-separated numbers of simultaneous processes"
    )
    parser.add_argument(
        "--variants",
        default="default,CUDA_DEVICE_MAX_CONNECTIONS=1",
        help="comma-separated environment variants: 'default' or NAME=VALUE",
    )
    parser.add_argument("--json-out", type=Path, default=None, help="write the rows here as JSON")
    args = parser.parse_args(argv)
    rows = []
    for variant in args.variants.split(","):
        env = dict(os.environ)
        if variant != "default":
            name, _, value = variant.partition("=")
            env[name] = value
        for count in (int(c) for c in args.counts.split(",")):
            rows.append({"variant": variant, **one_round(count, env)})
    print(f"{'variant':36} {'procs':>5} {'wall_s':>7} {'ctx_med':>7} {'ctx_max':>7}")
    for r in rows:
        print(
            f"{r['variant']:36} {r['processes']:>5} {r['wall_s']:>7.2f} {r['context_median_s']:>7.2f} "
            f"{r['context_max_s']:>7.2f}"
        )
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
