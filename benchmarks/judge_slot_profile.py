"""Diagnostic (GPU): where does the time a judge holds the GPU's timing slot go?

The pool's throughput is bounded by the timing slot (one evaluation times at a time; an H200 throughput run,
results/judge_h200/throughput_run_e_ipc.json, held it 99.7 % of the wall). This runs honest candidates of the
throughput benchmark in this process, each against a fresh sandboxed runner, profiles (cProfile) only while
the slot is held, and prints the seconds held per evaluation and the functions that took them. JSON to
argv[1].

    PYTHONPATH=. python3 benchmarks/judge_slot_profile.py OUT.json [TASKS]
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import throughput
from kernel_reward.judge import pipeline
from kernel_reward.options import EvalOptions
from kernel_reward.request import EvalRequest

DEFAULT_TASKS = "activation_elu,activation_leaky_relu,activation_hardswish"


class ProfiledSlot:
    """A timing slot that profiles and clocks whatever runs while it is held."""

    def __init__(self) -> None:
        self.profile = cProfile.Profile()
        self.held_s = 0.0

    @contextlib.contextmanager
    def __call__(self):
        start = time.perf_counter()
        self.profile.enable()
        try:
            yield
        finally:
            self.profile.disable()
            self.held_s += time.perf_counter() - start


def main() -> None:
    out_path = Path(sys.argv[1] if len(sys.argv) > 1 else "judge_slot_profile.json")
    tasks = (sys.argv[2] if len(sys.argv) > 2 else DEFAULT_TASKS).split(",")
    pairs = [p for p in throughput.build_pairs() if p["task"] in tasks and p["variant"].startswith("honest")]
    slot = ProfiledSlot()
    rows = []
    for pair in pairs:
        held_before = slot.held_s
        request = EvalRequest(
            reference_code=pair["reference"],
            candidate=pair["candidate"],
            entry_point="Model",
            options=EvalOptions(),
            device=os.environ.get("DEVICE", "cuda"),
        )
        with tempfile.TemporaryDirectory() as work_dir:
            result = pipeline.evaluate_request(request, work_dir=Path(work_dir), timing_slot=slot)
        rows.append(
            {
                "task": pair["task"],
                "variant": pair["variant"],
                "status": result.status.value,
                "slot_s": round(slot.held_s - held_before, 4),
                "speedup": result.speedup,
                "timing_method": result.timing_method,
                "phases": result.phase_seconds,
                "error": (result.error or "")[:500],
            }
        )
        print(
            f"{pair['task']:24s} {pair['variant']:12s} {result.status.value:10s} slot {rows[-1]['slot_s']:.3f} s "
            f"batches/calls {(result.timing_method or {}).get('calls_per_batch')}",
            flush=True,
        )
    text = io.StringIO()
    if slot.held_s > 0:  # no slot was ever taken (CPU: no timing), so no profile to print
        stats = pstats.Stats(slot.profile, stream=text)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(45)
    out_path.write_text(
        json.dumps({"rows": rows, "slot_s_mean": slot.held_s / max(len(rows), 1)}, indent=1, default=str)
    )
    out_path.with_suffix(".txt").write_text(text.getvalue())
    print(text.getvalue()[-9000:])
    print(f"mean slot-held seconds per evaluation: {slot.held_s / max(len(rows), 1):.3f} over {len(rows)}")


if __name__ == "__main__":
    main()
