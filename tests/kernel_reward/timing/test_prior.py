"""The timing prior: its validation, its key, and when a judge may take its baseline (pure, no device)."""

import json
import math

import pytest

from kernel_reward.options import EvalOptions
from kernel_reward.timing.calibration import CalibrationBlock
from kernel_reward.timing.prior import TimingPrior, prior_key


def _block(candidate_ms: float) -> CalibrationBlock:
    return CalibrationBlock([0.05] * 8, [candidate_ms] * 8, [1.0] * 8)


def _prior(*handovers: float) -> TimingPrior:
    return TimingPrior(4, tuple(_block(ms) for ms in handovers), 0.01, (0.2, 0.21, 0.19), (0, 10), 3000.0)


def test_a_prior_survives_json_and_rejects_what_a_judge_never_measures():
    prior = _prior(0.30, 0.31)
    assert TimingPrior.from_dict(json.loads(json.dumps(prior.to_dict()))) == prior
    assert (
        TimingPrior.from_dict(prior.to_dict()) == prior
    )  # each broken variant below fails for its own reason
    for broken in (
        {**prior.to_dict(), "before": [math.nan]},
        {**prior.to_dict(), "before": []},
        {**prior.to_dict(), "calls": 0},
        {**prior.to_dict(), "bandwidth_gbps": -1.0},
        {
            **prior.to_dict(),
            "bandwidth_gbps": 0.0,
        },  # never measured: the roofline would have nothing to go on
        {**prior.to_dict(), "blocks": []},
        {**prior.to_dict(), "before": [0.1] * 5000},
        {k: v for k, v in prior.to_dict().items() if k != "blocks"},
        "not a mapping",
    ):
        with pytest.raises(ValueError):
            TimingPrior.from_dict(broken)


def test_a_reused_prior_carries_the_measuring_judge_s_own_fixed_costs():
    prior = _prior(0.30, 0.31, 0.45)
    overhead = prior.overhead()
    # the two closest blocks pooled (as calibration.overhead_from did for the judge that measured them), plus the
    # output copies; nothing of a later runner enters it
    assert overhead.candidate_ms == pytest.approx(0.305 + 0.01)
    assert overhead.output_copy_ms == 0.01 and overhead.reference_ms == pytest.approx(0.05)


def test_the_key_separates_what_changes_the_timed_batches():
    options = EvalOptions()
    key = prior_key("ref", "Model", "H100", options)
    assert key == prior_key("ref", "Model", "H100", EvalOptions())
    assert key != prior_key("ref2", "Model", "H100", options)
    assert key != prior_key("ref", "Model", "H200", options)
    assert key != prior_key("ref", "Model", "H100", EvalOptions(timing_budget_ms=300.0))
    assert key != prior_key("ref", "Model", "H100", EvalOptions(baseline="compile"))
    assert key == prior_key("ref", "Model", "H100", EvalOptions(num_trials=9))  # correctness only
