"""False-positive rate of strict mode's coverage floor on correct honest candidates measured on a GPU.

Strict mode (``EvalOptions.min_coverage``) calls a correct candidate ``hacked`` (``low_coverage``) when its
Triton coverage (PR) is below a floor. This reads the coverages of correct candidates from saved GPU runs and
counts, for each floor, how many would have been called hacked. Sources (all measured on one H200):

- the shipped tasks' honest solutions in a throughput run (``benchmarks/results/judge_h200/throughput_run_m.json``),
- the correct samples of the GPU learning run's evaluations (``docs/training/gpu_learning_run/raw/eval_*``),
- liger-kernel's production kernels (``benchmarks/results/production_kernels_h200_run_o.json``).

    python benchmarks/coverage_floor.py [--json-out benchmarks/results/coverage_floor_h200.json]
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FLOORS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def _results(node: Any) -> Iterator[dict[str, Any]]:
    """Every dict in a JSON tree that has a status and a coverage (one evaluation's result)."""
    if isinstance(node, dict):
        if "status" in node and "coverage" in node:
            yield node
        for value in node.values():
            yield from _results(value)
    elif isinstance(node, list):
        for value in node:
            yield from _results(value)


def honest_coverages(root: Path = ROOT) -> list[tuple[str, float]]:
    """(source:name, coverage) of every correct candidate in the saved runs (a task's honest solution once)."""
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for result in _results(
        json.loads((root / "benchmarks/results/judge_h200/throughput_run_m.json").read_text())
    ):
        if result["status"] == "correct" and result["task"] not in seen:  # the throughput run repeats tasks
            seen.add(result["task"])
            out.append((f"shipped:{result['task']}", float(result["coverage"])))
    for run in sorted((root / "docs/training/gpu_learning_run/raw").glob("eval_*/samples.jsonl.gz")):
        for line in gzip.decompress(run.read_bytes()).decode().splitlines():
            sample = json.loads(line)
            if sample["result"]["status"] == "correct":
                out.append((f"{run.parent.name}:{sample['uuid']}", float(sample["result"]["coverage"])))
    for kernel in json.loads((root / "benchmarks/results/production_kernels_h200_run_o.json").read_text())[
        "kernels"
    ]:
        if kernel["status"] == "correct":
            out.append((f"liger:{kernel['kernel']}", float(kernel["coverage"])))
    return out


def false_positives(coverages: list[tuple[str, float]], floors=FLOORS) -> list[dict[str, Any]]:
    """Per floor: how many correct candidates strict mode would call hacked, and which (lowest first)."""
    rows = []
    for floor in floors:
        below = sorted((c, name) for name, c in coverages if c < floor)
        rows.append(
            {
                "floor": floor,
                "false_positives": len(below),
                "rate": len(below) / len(coverages),
                "lowest": [f"{name} ({c:.2f})" for c, name in below[:3]],
            }
        )
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--json-out", type=Path, help="write the table and every coverage as JSON")
    args = parser.parse_args(argv)
    coverages = honest_coverages()
    rows = false_positives(coverages)
    print(f"{len(coverages)} correct honest candidates (H200)")
    print(f"{'floor':>6} {'false pos.':>10} {'rate':>7}  lowest")
    for row in rows:
        print(
            f"{row['floor']:>6.1f} {row['false_positives']:>10d} {row['rate']:>7.3f}  {', '.join(row['lowest'])}"
        )
    if args.json_out:
        args.json_out.write_text(
            json.dumps(
                {
                    "candidates": len(coverages),
                    "floors": rows,
                    "coverages": [[name, c] for name, c in coverages],
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
