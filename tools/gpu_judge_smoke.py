"""GPU smoke check of the judge / runner split: a few hack-corpus candidates through both evaluation paths.

Two through the one-shot path (this process judges, one exec'd runner), all four through the pool (zygote
judges with forked runners). Prints one line each.

    python tools/gpu_judge_smoke.py [--device cuda] [--json-out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
ENTRIES = REPO_ROOT / "hack_corpus" / "entries"
TASKS = REPO_ROOT / "hack_corpus" / "tasks"
PAIRS = [
    ("honest_add_relu_big_gpu", "add_relu_big"),
    ("honest_matmul_ieee_gpu", "matmul_big"),
    ("fault_wrong_result", "add_relu"),
    ("honest_add_relu", "add_relu"),
]


def _row(name: str, result, wall: float) -> dict:
    return {
        "candidate": name,
        "status": result.status.value,
        "reward": result.reward,
        "speedup": result.speedup,
        "ci": result.speedup_ci,
        "coverage": result.coverage,
        "ref_ms": result.reference_time_ms,
        "kernel_ms": result.kernel_time_ms,
        "timing_method": result.timing_method,
        "flags": result.flags,
        "isolation_level": result.isolation.get("level"),
        "wall_s": round(wall, 2),
        "phases": result.phase_seconds,
        "error": (result.error or "")[:800],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args()
    from kernel_reward import Evaluator
    from kernel_reward.judge.pipeline import evaluate_request
    from kernel_reward.options import EvalOptions
    from kernel_reward.request import EvalRequest

    rows = []
    for name, task in PAIRS[:2]:
        request = EvalRequest(
            (TASKS / f"{task}.py").read_text(),
            (ENTRIES / f"{name}.py").read_text(),
            device=args.device,
            options=EvalOptions(),
        )
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            result = evaluate_request(request, work_dir=Path(tmp))
        rows.append({"path": "one-shot", **_row(name, result, time.perf_counter() - start)})
        print(json.dumps(rows[-1])[:1500], flush=True)
    with Evaluator(device=args.device, workers=2, timeout=300) as ev:
        pairs = [
            ((TASKS / f"{task}.py").read_text(), (ENTRIES / f"{name}.py").read_text()) for name, task in PAIRS
        ]
        start = time.perf_counter()
        results = ev.evaluate_many(pairs)
        wall = time.perf_counter() - start
    for (name, _), result in zip(PAIRS, results, strict=True):
        rows.append({"path": "pool", **_row(name, result, wall)})
        print(json.dumps(rows[-1])[:1500], flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(rows, indent=1, default=str))
    for row in rows:
        print(
            f"{row['path']:9s} {row['candidate']:28s} {row['status']:14s} speedup={row['speedup']} cov={row['coverage']} "
            f"iso={row['isolation_level']} {row['error'][:120]!r}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
