"""Reward schemes are pure functions: exact values from background §3's formulas."""

import pytest

from kernel_reward.reward import HONEST_FAILURES, SCHEME_PARAMS, compute_reward, validate_reward_params


def reward(scheme, status="correct", speedup=2.0, coverage=0.5, hacked=False, **kwargs):
    return compute_reward(scheme, status=status, speedup=speedup, coverage=coverage, hacked=hacked, **kwargs)


def test_drkernel_formula_and_cap():
    assert reward("drkernel").reward == pytest.approx(0.5 + 0.5 * 2.0 + 0.5 * 0.5)
    assert reward("drkernel", speedup=10.0, coverage=1.0).reward == pytest.approx(0.5 + 1.5 + 0.5)
    assert reward("drkernel", status="incorrect").reward == 0.0


def test_paper_formula():
    assert reward("paper", speedup=1.5, coverage=0.2).reward == pytest.approx(1 + 1.5 + 0.2)
    assert reward("paper", speedup=4.0, coverage=0.0).reward == pytest.approx(1 + 3)


def test_custom_weights():
    params = {"w_correct": 0.0, "w_speed": 1.0, "w_coverage": 0.0, "speedup_cap": 2.0}
    assert reward("drkernel", speedup=5.0, params=params).reward == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("status", "speedup", "expected"),
    [
        ("compile_error", None, -0.5),
        ("format_error", None, -0.5),
        ("incorrect", None, -0.3),
        ("runtime_error", None, -0.3),
        ("correct", 0.8, -0.1),
        ("correct", 1.0, 0.2),
        ("correct", 1.19, 0.2),
        ("correct", 1.2, 0.4),
        ("correct", 1.5, 0.6),
        ("correct", 2.5, 0.8),
        ("correct", 3.0, 1.0),
        ("correct", 7.0, 1.0),
    ],
)
def test_ladder(status, speedup, expected):
    # a timed (GPU) run: failures carry no speedup and still get their rung
    assert reward("ladder", status=status, speedup=speedup).reward == pytest.approx(expected)


# Valid parameters beside the defaults: an order-keeping ladder and a reweighted drkernel.
PARAMS = {
    "drkernel": [None, {"w_correct": 0.1, "w_speed": 2.0}],
    "paper": [None],
    "ladder": [None, {"compile_error": -2.0, "incorrect": -1.0, "slower": -0.05}],
    "correctness": [None, {"correct_value": 3.0}],
}


def worst_honest_failure(scheme, params, timing_available):
    return min(
        reward(
            scheme,
            status=status,
            speedup=None,
            coverage=None,
            params=params,
            timing_available=timing_available,
        ).reward
        for status in HONEST_FAILURES
    )


@pytest.mark.parametrize("scheme", sorted(SCHEME_PARAMS))
@pytest.mark.parametrize("timing_available", [True, False])
@pytest.mark.parametrize("hacked_penalty", [0.0, -0.2, -5.0])
def test_a_hack_never_pays_more_than_the_worst_honest_failure(scheme, timing_available, hacked_penalty):
    """A kernel that falls back to torch when it fails (``try: kernel except: torch``) is hacked; it must not be
    paid more than the honest failure it hides, under any scheme, mode or valid parameters."""
    for params in PARAMS[scheme]:
        hacked = reward(
            scheme,
            status="hacked",
            hacked=True,
            params=params,
            hacked_penalty=hacked_penalty,
            timing_available=timing_available,
        ).reward
        assert hacked <= worst_honest_failure(scheme, params, timing_available), (scheme, params)
        assert hacked <= hacked_penalty


def test_hacked_gets_the_penalty_where_it_is_below_every_failure():
    for scheme in ("drkernel", "paper", "correctness"):
        assert reward(scheme, status="hacked", hacked=True).reward == 0.0
        assert reward(scheme, status="hacked", hacked=True, hacked_penalty=-1.0).reward == -1.0
    assert reward("ladder", status="hacked", hacked=True).reward == -0.5  # the compile-error rung
    assert reward("ladder", status="hacked", hacked=True, hacked_penalty=-1.0).reward == -1.0


@pytest.mark.parametrize(
    "params, named",
    [
        ({"compile_error": 0.1}, "compile_error"),  # a failure that pays
        ({"incorrect": -0.6}, "incorrect"),  # wrong output paid less than no code at all
        ({"slower": -0.4}, "slower"),  # a correct, slow kernel paid less than a wrong one
        ({"slower": 0.3}, "slower"),  # slower than the reference paid more than 1.0x
    ],
)
def test_ladder_parameters_that_break_the_reward_order_are_refused(params, named):
    with pytest.raises(ValueError, match=named):
        validate_reward_params("ladder", params)


def test_no_timing_falls_back_to_correctness():
    outcome = reward("drkernel", speedup=None, coverage=None, timing_available=False)
    assert (outcome.reward, outcome.scheme) == (1.0, "correctness")
    assert reward("ladder", status="incorrect", speedup=None, timing_available=False).reward == 0.0
    assert reward("correctness", params={"correct_value": 2.0}).reward == 2.0


def test_failures_in_timed_mode():
    assert reward("drkernel", status="runtime_error", speedup=None).reward == 0.0
    with pytest.raises(ValueError, match="needs a speedup"):
        reward("drkernel", status="correct", speedup=None)


def test_missing_coverage_is_named():
    outcome = reward("drkernel", coverage=None)
    assert outcome.scheme == "drkernel-nocov"
    assert outcome.reward == pytest.approx(0.5 + 1.0)


def test_bad_params_are_rejected_with_names():
    with pytest.raises(ValueError, match="w_speeed"):
        validate_reward_params("drkernel", {"w_speeed": 1.0})
    with pytest.raises(ValueError, match="unknown reward scheme"):
        validate_reward_params("fast", {})
    with pytest.raises(ValueError, match="finite"):
        validate_reward_params("paper", {"w_speed": float("nan")})


def test_honest_failures_are_every_status_but_correct_and_hacked():
    from kernel_reward.result import Status

    assert set(HONEST_FAILURES) == {s.value for s in Status} - {"correct", "hacked"}


def test_the_speed_term_can_read_the_lower_end_of_the_interval():
    """speedup_estimate='lower': the reward pays the speedup the measurement surely showed; the result still
    reports the ratio of medians."""
    from kernel_reward.judge.pipeline import rewarded_speedup
    from kernel_reward.options import EvalOptions
    from kernel_reward.result import EvalResult, Status

    result = EvalResult(status=Status.CORRECT, speedup=2.0, speedup_ci=(1.25, 2.6))
    assert rewarded_speedup(result, EvalOptions()) == 2.0
    assert rewarded_speedup(result, EvalOptions(speedup_estimate="lower")) == 1.25
    no_interval = EvalResult(status=Status.CORRECT, speedup=2.0)
    assert rewarded_speedup(no_interval, EvalOptions(speedup_estimate="lower")) == 2.0
    with pytest.raises(ValueError, match="speedup_estimate"):
        EvalOptions(speedup_estimate="mean")
