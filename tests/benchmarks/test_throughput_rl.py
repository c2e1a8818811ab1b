"""benchmarks/throughput.py, RL-shaped: groups of one task's candidates handed to the pool a step at a time."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks import throughput  # noqa: E402


def test_rl_steps_are_whole_groups_of_one_task_each():
    steps = throughput.build_rl_steps(group_size=8, prompts_per_step=3, steps=2, preset="small")
    assert [len(step) for step in steps] == [24, 24]
    groups = [step[i : i + 8] for step in steps for i in range(0, 24, 8)]
    assert all(len({pair["task"] for pair in group}) == 1 for group in groups)
    assert len({group[0]["task"] for group in groups}) == 6  # the tasks taken in turn
    first = groups[0]
    assert len({pair["variant"] for pair in first}) == 8  # every variant once before any repeats
    assert {pair["expected"] for pair in first} >= {"correct", "hacked", "incorrect"}
    assert throughput.build_rl_steps(8, 3, 2, preset="small") == steps  # seeded
    with pytest.raises(ValueError, match=">= 1"):
        throughput.build_rl_steps(0, 1, 1, preset="small")


def test_an_rl_step_through_the_cpu_pool():
    report = throughput.rl_throughput(
        device="cpu", workers=1, group_size=2, prompts_per_step=1, steps=2, timeout_s=120, preset="small"
    )
    pool = report["pool"]
    assert pool["evaluations"] == 4 and len(pool["step_s"]) == 2
    assert pool["matches_expected"] == 4, [(r["variant"], r["status"], r["error"]) for r in pool["rows"]]
    assert throughput.format_report(report).startswith("RL-shaped on cpu: 2 steps of 1 tasks x 2 candidates")
