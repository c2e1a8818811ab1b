"""Keep the RL pool tasks the model solves some of the time: the tasks that give TRLOO a gradient.

A task every sample solves, or none does, gives every sample the same reward: its leave-one-out advantages are
all 0 and it only costs rollout and reward time. The GPU learning run (``tools/gpu_learning_run.sh pool``)
evaluates the SFT model on the candidate pool first (a few samples per task), then keeps the tasks whose correct
rate lies in ``[--min, --max]``.

    python tools/select_rl_pool.py --dataset POOL_DIR --summary EVAL_DIR/summary.json --out FILTERED_DIR \
        [--min 0.1] [--max 0.5] [--at-least 16]
    python tools/select_rl_pool.py --dataset POOL_DIR --uuids rl_pool.json --out FILTERED_DIR

``--uuids`` rebuilds a pool chosen earlier (a JSON ``{"uuids": [...]}``, as a pre-registered experiment commits
it); every listed uuid must be in the candidate pool. ``--uuids-out`` writes the chosen pool's uuids in that form.

Writes the filtered dataset folder (same rows, same features) and prints the rates it chose from. Exits 1 when
fewer than ``--at-least`` tasks qualify (the run would then train on almost nothing: say so, do not train).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def select_tasks(per_task: Mapping[str, Mapping[str, Any]], low: float, high: float) -> list[str]:
    """Ids of the tasks whose ``correct_rate`` is in ``[low, high]`` (pure)."""
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError(f"need 0 <= min <= max <= 1, got {low} and {high}")
    return sorted(uuid for uuid, row in per_task.items() if low <= row["correct_rate"] <= high)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dataset", type=Path, required=True, help="the candidate pool (a dataset folder)")
    chosen_by = parser.add_mutually_exclusive_group(required=True)
    chosen_by.add_argument("--summary", type=Path, help="kernel_eval summary.json of the model on it")
    chosen_by.add_argument("--uuids", type=Path, help='a pool chosen earlier: JSON {"uuids": [...]}')
    parser.add_argument("--out", type=Path, required=True, help="folder for the filtered dataset")
    parser.add_argument(
        "--uuids-out", type=Path, default=None, help='also write the kept uuids: {"uuids": [...]}'
    )
    parser.add_argument("--min", type=float, default=0.1, help="lowest correct rate kept (default 0.1)")
    parser.add_argument("--max", type=float, default=0.5, help="highest correct rate kept (default 0.5)")
    parser.add_argument(
        "--at-least", type=int, default=16, help="fewest tasks worth training on (default 16)"
    )
    args = parser.parse_args(argv)
    from datasets import load_dataset

    rows = load_dataset(str(args.dataset))["train"]
    ids = [row["uuid"] for row in rows["extra_info"]]
    if args.uuids is not None:
        chosen = set(json.loads(args.uuids.read_text())["uuids"])
        unknown = sorted(chosen - set(ids))
        if unknown:
            parser.error(f"{args.uuids} names tasks not in {args.dataset}: {unknown[:5]}")
        return write_pool(rows, chosen, args.out, args.uuids_out)
    per_task = json.loads(args.summary.read_text())["per_task"]
    unknown = sorted(set(per_task) - set(ids))
    if unknown:
        parser.error(f"{args.summary} has tasks not in {args.dataset}: {unknown[:5]}")
    chosen = set(select_tasks(per_task, args.min, args.max))
    rates = Counter(round(row["correct_rate"], 3) for row in per_task.values())
    print(f"{len(per_task)} tasks evaluated; tasks per correct rate: {dict(sorted(rates.items()))}")
    print(f"{len(chosen)} tasks with a rate in [{args.min}, {args.max}]")
    if len(chosen) < args.at_least:
        print(f"fewer than {args.at_least} tasks qualify: not writing {args.out}", file=sys.stderr)
        return 1
    return write_pool(rows, chosen, args.out, args.uuids_out)


def write_pool(rows, chosen: set[str], out: Path, uuids_out: Path | None) -> int:
    """Write the rows whose uuid is in ``chosen`` as the dataset folder ``out``, and their uuids (the form
    ``--uuids`` reads) to ``uuids_out`` when given."""
    kept = rows.filter(lambda row: row["extra_info"]["uuid"] in chosen)
    kept.to_parquet(str(out / "data" / "train-00000-of-00001.parquet"))
    print(f"wrote {len(kept)} rows to {out}")
    if uuids_out is not None:
        uuids = sorted(row["uuid"] for row in kept["extra_info"])
        uuids_out.write_text(json.dumps({"uuids": uuids}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote their {len(uuids)} uuids to {uuids_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
