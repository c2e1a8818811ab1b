"""Known-answer tests of the pure evaluation metrics (expected values computed by hand in the comments)."""

import math

import pytest

from kernel_eval.metrics import (
    Outcome,
    best_turn_index,
    fast_p,
    outcome_at_turn,
    run_metrics,
    turn_metrics,
)
from kernel_reward.result import EvalResult, Status

FORMAT_ERROR = Outcome(formatted=False, compiled=False, correct=False, hacked=False)
COMPILE_ERROR = Outcome(formatted=True, compiled=False, correct=False, hacked=False, timed=True)
INCORRECT = Outcome(formatted=True, compiled=True, correct=False, hacked=False, reward=0.0, timed=True)
# A hack whose (bogus) speedup was measured: it must never count as fast.
HACKED = Outcome(formatted=True, compiled=True, correct=False, hacked=True, speedup=10.0, timed=True)


def correct(speedup, reward=1.0):
    return Outcome(
        formatted=True, compiled=True, correct=True, hacked=False, speedup=speedup, reward=reward, timed=True
    )


# Four samples, up to two turns; sample 4 stopped after turn 1 (it keeps its turn-1 outcome at turn 2).
TRAJECTORIES = [
    [FORMAT_ERROR, correct(1.3)],
    [correct(2.5, reward=2.0), INCORRECT],
    [HACKED, HACKED],
    [COMPILE_ERROR],
]


def test_per_turn_rates_and_fast_p_over_all_samples():
    m = run_metrics(TRAJECTORIES)
    assert m.num_turns == 2 and m.timing_available
    t1, t2 = m.per_turn
    # turn 1: formatted 3/4, compiled {2,3} 2/4, correct {2} 1/4, hacked {3} 1/4, fast at every p: {2} (2.5x)
    assert (t1.num_samples, t1.format_rate, t1.compile_rate, t1.correct_rate, t1.hacked_rate) == (
        4,
        0.75,
        0.5,
        0.25,
        0.25,
    )
    assert t1.fast_p == {"1": 0.25, "1.2": 0.25, "1.5": 0.25, "2": 0.25}
    assert t1.mean_speedup == 2.5 and t1.geomean_speedup == pytest.approx(2.5)
    # turn 2: all formatted, compiled {1,2,3} 3/4, correct {1} 1.3x, hacked {3}; Fast@1.5 = Fast@2 = 0
    assert (t2.format_rate, t2.compile_rate, t2.correct_rate, t2.hacked_rate) == (1.0, 0.75, 0.25, 0.25)
    assert t2.fast_p == {"1": 0.25, "1.2": 0.25, "1.5": 0.0, "2": 0.0}
    assert m.final == t2
    assert t1.mean_reward == pytest.approx((0 + 2.0 + 0 + 0) / 4)


def test_best_of_history():
    best = run_metrics(TRAJECTORIES).best_of_history
    # best turns: s1 turn 2 (1.3x), s2 turn 1 (2.5x), s3 none correct -> turn 1, s4 turn 1
    assert best.best_turn_histogram == {"1": 3, "2": 1}
    assert best.correct_rate == 0.5
    assert best.fast_p == {"1": 0.5, "1.2": 0.5, "1.5": 0.25, "2": 0.25}
    assert best.mean_speedup == pytest.approx(1.9)
    assert best.geomean_speedup == pytest.approx(math.sqrt(1.3 * 2.5))


def test_best_so_far_by_turn():
    m = run_metrics(TRAJECTORIES)
    first, second = m.best_so_far
    # after turn 1 only turn-1 outcomes count: s2 (2.5x) is the only correct sample
    assert first.correct_rate == 0.25 and first.fast_p == {"1": 0.25, "1.2": 0.25, "1.5": 0.25, "2": 0.25}
    assert second == m.best_of_history


def test_best_turn_prefers_correct_then_speed_then_earlier():
    assert best_turn_index([correct(3.0), correct(1.1)]) == 0
    assert best_turn_index([HACKED, correct(0.5)]) == 1  # a slow correct turn beats a "fast" hack
    assert best_turn_index([correct(2.0), correct(2.0)]) == 0


def test_fast_p_is_unknown_without_timing_and_rates_still_counted():
    untimed = [Outcome(True, True, True, False, speedup=None, timed=False), FORMAT_ERROR]
    m = run_metrics([[o] for o in untimed])
    assert not m.timing_available
    assert m.final.fast_p == {"1": None, "1.2": None, "1.5": None, "2": None}
    assert m.final.correct_rate == 0.5 and m.final.format_rate == 0.5
    assert m.final.mean_speedup is None
    assert fast_p(untimed, 1.0, timing_available=False) is None


def test_correct_without_timing_in_a_timed_run_is_not_fast_but_counted():
    outcomes = [correct(1.5), Outcome(True, True, True, False, speedup=None, timed=False)]
    m = turn_metrics(outcomes, timing_available=True)
    assert m.fast_p["1"] == 0.5 and m.num_correct_untimed == 1


def test_outcome_from_result_counts_hacked_as_incorrect():
    hacked = EvalResult(
        status=Status.HACKED, compiled=True, correct=True, hacked=True, speedup=4.0, timing_available=True
    )
    o = Outcome.from_result(hacked)
    assert (o.correct, o.hacked, o.compiled, o.formatted) == (False, True, True, True)
    fmt = Outcome.from_result(EvalResult(status=Status.FORMAT_ERROR))
    assert not fmt.formatted and not fmt.compiled
    ok = Outcome.from_result(EvalResult(status=Status.CORRECT, compiled=True, correct=True, reward=1.0))
    assert ok.correct and ok.speedup is None and not ok.timed


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="hacked"):
        Outcome(True, True, True, True)
    with pytest.raises(ValueError, match="speedup"):
        correct(float("nan"))
    with pytest.raises(ValueError, match="no trajectories"):
        run_metrics([])
    with pytest.raises(ValueError, match="1-based"):
        outcome_at_turn([INCORRECT], 0)


def test_gpu_run_without_any_correct_sample_has_fast_p_zero_not_unknown():
    failed_on_gpu = Outcome.from_result(EvalResult(status=Status.FORMAT_ERROR, mode="gpu"))
    failed_on_cpu = Outcome.from_result(EvalResult(status=Status.FORMAT_ERROR, mode="interpreter"))
    assert run_metrics([[failed_on_gpu]]).final.fast_p["1.2"] == 0.0
    assert run_metrics([[failed_on_cpu]]).final.fast_p["1.2"] is None


def test_fast_p_by_the_interval_lower_bound():
    """KernelBench #166: an unchanged kernel passes fast_1 about half the time by its median. By the lower end of
    the 95 % interval it does not; a clear win passes both ways; no interval means the point estimate."""
    noise = Outcome(True, True, True, False, speedup=1.02, speedup_low=0.97, timed=True)
    win = Outcome(True, True, True, False, speedup=1.6, speedup_low=1.3, timed=True)
    no_interval = Outcome(True, True, True, False, speedup=1.25, timed=True)
    metrics = turn_metrics([noise, win, no_interval, FORMAT_ERROR], timing_available=True)
    assert metrics.fast_p["1"] == 0.75 and metrics.fast_p_lower["1"] == 0.5
    assert metrics.fast_p["1.2"] == 0.5 and metrics.fast_p_lower["1.2"] == 0.5
    assert turn_metrics([noise], timing_available=False).fast_p_lower["1"] is None
    with pytest.raises(ValueError, match="speedup_low"):
        Outcome(True, True, True, False, speedup=1.0, speedup_low=float("nan"), timed=True)


def test_outcome_takes_the_lower_bound_from_the_result():
    from kernel_reward.result import EvalResult, Status

    result = EvalResult(
        status=Status.CORRECT,
        compiled=True,
        correct=True,
        speedup=1.1,
        speedup_ci=(0.95, 1.3),
        timing_available=True,
        mode="gpu",
    )
    assert Outcome.from_result(result).speedup_low == 0.95


def test_every_status_has_a_plot_colour():
    from kernel_eval.report import STATUS_COLOURS

    assert {s.value for s in Status} == set(STATUS_COLOURS)
