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


def test_host_cpu_busy_share_from_two_proc_stat_readings(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8\n")
    before = throughput.read_cpu_times(stat)
    stat.write_text("cpu  250 0 100 900 50 0 0 0 0 0\n")
    after = throughput.read_cpu_times(stat)
    assert before == [100, 0, 50, 800, 50, 0, 0, 0] and after == [250, 0, 100, 900, 50, 0, 0, 0]
    assert throughput.cpu_busy_fraction(before, after) == pytest.approx(200 / 300)  # 200 busy ticks of 300
    assert (
        throughput.cpu_busy_fraction(before, before) is None
        and throughput.cpu_busy_fraction(None, after) is None
    )
    stat.write_text("intr 1 2 3\n")
    assert throughput.read_cpu_times(stat) is None and throughput.read_cpu_times(tmp_path / "missing") is None
    live = throughput.read_cpu_times()
    assert live is None or len(live) == 8


def test_ledger_windows_the_spans_could_not_place_are_counted():
    import types

    def result(*flags):
        return types.SimpleNamespace(flags=list(flags))

    results = [
        result(
            "launch_ledger_off_span: 3 kernels (0 own, 0.1 ms) ran outside", "coverage_from_launch_ledger"
        ),
        result("launch_ledger_unanchored: no record ran inside", "launch_ledger_off_span: 1 kernels"),
        result("coverage_from_launch_ledger"),
    ]
    assert throughput.ledger_span_counts(results) == {"ledger_off_span": 2, "ledger_unanchored": 1}


def test_the_lock_budget_counts_an_evaluation_without_a_span_as_zero():
    import types

    def result(**seconds):
        return types.SimpleNamespace(phase_seconds=seconds)

    results = [
        result(**{"lock.timing_wait": 0.4, "lock.gpu_phase_wait": 0.2, "total": 2.0}),
        result(**{"lock.gpu_phase_wait": 0.6, "total": 1.0}),  # failed before timing: no timing spans
    ]
    budget = throughput.lock_budget(results)
    assert budget["lock.timing_wait"] == pytest.approx(0.2)  # 0.4 over two evaluations, not over the one
    assert budget["lock.gpu_phase_wait"] == pytest.approx(0.4) and budget["total"] == pytest.approx(1.5)
    assert budget["lock.timing_held"] == 0.0 and throughput.lock_budget([]) == {}
    assert "lock.gpu_phase_longest" not in budget  # a maximum, not a share of the budget


def test_identical_requests_of_a_step_are_judged_once_and_counted_apart():
    """The RL-shaped run shares as the trainer's reward does: two identical pairs in one step are one evaluation,
    and the report counts requests and evaluations apart (a run without sharing counts both alike)."""
    (pair,) = throughput.build_rl_steps(1, 1, 1, preset="small")[0]
    shared = throughput.run_pool([pair, pair], "cpu", 1, 120, step_size=2, share_identical=True)
    assert (shared["requests"], shared["evaluations"], shared["share_identical"]) == (2, 1, True)
    assert shared["requests_per_min"] == 2 * shared["evals_per_min"]
    assert shared["rows"][0]["status"] == shared["rows"][1]["status"] == pair["expected"]
    assert "shared_result: the evaluation of identical request 0 of this batch" in shared["rows"][1]["flags"]
