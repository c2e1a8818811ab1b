"""Reward schemes are pure functions: exact values from background §3's formulas."""

import pytest

from kernel_reward.reward import SCHEME_PARAMS, compute_reward, validate_reward_params


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


def test_hacked_gets_penalty_in_every_scheme():
    for scheme in SCHEME_PARAMS:
        assert reward(scheme, status="hacked", hacked=True).reward == 0.0
        assert reward(scheme, status="hacked", hacked=True, hacked_penalty=-1.0).reward == -1.0


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
