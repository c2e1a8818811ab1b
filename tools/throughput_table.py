"""One table row per throughput JSON of ``benchmarks/bench_reward.py --throughput``: workers, warm spares,
evaluations a minute, times the fresh-process baseline (not for RL-shaped runs), the timing slot's busy share, the
host's CPU busy share (runs that recorded it), the honest kernels' median speedup, results flagged
noise-dominated, and statuses as expected.

    python tools/throughput_table.py OUT/throughput_*.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path


def row(path: Path) -> dict:
    data = json.loads(path.read_text())
    pool, summary = data["pool"], data["summary"]
    rows = pool["rows"]
    honest = [r["speedup"] for r in rows if r["expected"] == "correct" and r["speedup"] is not None]
    return {
        "run": path.stem,
        "workers": pool["workers"],
        "spares": pool["warm_spares"],
        "eval/min": round(summary["pool_evals_per_min"], 1),
        "x fresh": round(summary["speedup_vs_baseline"], 1) if "speedup_vs_baseline" in summary else "-",
        "slot busy": round(pool["timing_slot_busy_fraction"], 2),
        "host CPU busy": _rounded(pool.get("host_cpu_busy_fraction")),
        "honest median": round(statistics.median(honest), 3) if honest else None,
        "noise flags": sum("timing_noise_dominated" in r["flags"] for r in rows),
        "as expected": f"{pool['matches_expected']}/{pool['evaluations']}",
    }


def _rounded(value: float | None) -> float | str:
    return "-" if value is None else round(value, 2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path, help="throughput JSON files")
    args = parser.parse_args(argv)
    table, missing = [], []
    for path in args.paths:
        try:
            table.append(row(path))
        except (OSError, ValueError, KeyError) as error:
            missing.append(f"{path}: {type(error).__name__}: {error}")
    if table:
        columns = list(table[0])
        print(" | ".join(columns))
        for entry in table:
            print(" | ".join(str(entry[c]) for c in columns))
    for line in missing:
        print(f"unreadable: {line}", file=sys.stderr)
    return 1 if missing or not table else 0


if __name__ == "__main__":
    sys.exit(main())
