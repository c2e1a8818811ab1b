"""kernel_eval.paired: per-task paired differences and their bootstrap interval."""

import numpy as np
import pytest

from kernel_eval.compare import compare_summaries
from kernel_eval.paired import paired_difference, paired_summary_differences


def test_a_constant_shift_has_a_zero_width_interval_at_the_shift():
    a = {f"t{i}": i / 10 for i in range(10)}
    b = {t: v + 0.25 for t, v in a.items()}
    d = paired_difference(a, b, metric="correct_rate")
    assert d.difference == pytest.approx(0.25)
    assert d.low == pytest.approx(0.25) and d.high == pytest.approx(0.25)
    assert d.significant and d.num_tasks == 10


def test_pairing_removes_the_task_spread_an_unpaired_comparison_would_keep():
    rng = np.random.default_rng(1)
    difficulty = rng.uniform(0, 1, 64)
    a = {f"t{i}": float(x) for i, x in enumerate(difficulty)}
    b = {f"t{i}": float(x + 0.05 + rng.normal(0, 0.02)) for i, x in enumerate(difficulty)}
    d = paired_difference(a, b)
    assert d.low > 0.03 and d.high < 0.07  # the per-task noise is 0.02; the difficulty spread (0.29) is gone
    unpaired_se = np.sqrt(np.var(list(a.values())) / 64 + np.var(list(b.values())) / 64)
    assert (d.high - d.low) < unpaired_se  # far narrower than an unpaired 95 % interval (~4 se)


def test_no_change_gives_an_interval_around_zero_that_is_not_significant():
    rng = np.random.default_rng(2)
    a = {f"t{i}": float(rng.integers(0, 9) / 8) for i in range(64)}
    b = {t: float(np.clip(v + rng.choice([-0.125, 0.125]), 0, 1)) for t, v in a.items()}
    d = paired_difference(a, b)
    assert d.low < d.difference < d.high
    assert d.low < 0 < d.high and not d.significant


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="different tasks.*only in A: \\['x'\\]"):
        paired_difference({"x": 1.0, "y": 0.0}, {"y": 0.0, "z": 1.0})
    with pytest.raises(ValueError, match="at least 2 tasks"):
        paired_difference({"x": 1.0}, {"x": 0.0})
    with pytest.raises(ValueError, match="no finite value for task\\(s\\) \\['y'\\]"):
        paired_difference({"x": 1.0, "y": None}, {"x": 0.0, "y": 0.0})
    with pytest.raises(ValueError, match="confidence"):
        paired_difference({"x": 1.0, "y": 0.0}, {"x": 0.0, "y": 0.0}, confidence=1.5)


def _summary(per_task: dict) -> dict:
    turn = {
        "num_samples": 8,
        "format_rate": 1.0,
        "compile_rate": 1.0,
        "correct_rate": 0.5,
        "hacked_rate": 0.0,
        "fast_p": {},
        "fast_p_lower": {},
    }
    return {
        **turn,
        "per_turn": [{**turn, "best_so_far": {"fast_p": {}}}],
        "best_of_history": {"correct_rate": 0.5, "fast_p": {}},
        "per_task": per_task,
    }


def test_compare_summaries_shows_the_paired_table_only_for_the_same_tasks():
    a = _summary({f"t{i}": {"correct_rate": 0.25, "fast_1": None} for i in range(4)})
    b = _summary({f"t{i}": {"correct_rate": 0.5, "fast_1": None} for i in range(4)})
    [diff] = paired_summary_differences(a, b)  # fast_1 without timing is skipped
    assert diff.metric == "correct_rate" and diff.difference == pytest.approx(0.25)
    text = compare_summaries(a, b, names=("sft", "rl"))
    assert "Paired by task" in text and "+0.250" in text and "[+0.250, +0.250]" in text
    c = _summary({"other": {"correct_rate": 1.0}, "t0": {"correct_rate": 1.0}})
    assert "Paired by task" not in compare_summaries(a, c)
