"""EvalOptions / EvalRequest: JSON round trips and validation messages that name the field."""

import json

import pytest

from kernel_reward.options import EvalOptions
from kernel_reward.request import EvalRequest


def test_defaults_follow_the_issue():
    options = EvalOptions()
    assert options.num_trials == 5
    assert options.seed_base is None  # hidden: a fresh secret per evaluation
    assert options.tolerance("torch.float32") == (1e-4, 1e-4)
    assert options.tolerance("torch.float16") == (1e-2, 1e-2)
    assert options.tolerance("bfloat16") == (1e-2, 1e-2)
    assert options.allow_tf32 is False
    assert options.hacked_penalty == 0.0


def test_round_trip_through_json():
    options = EvalOptions(
        num_trials=7,
        seed_base=3,
        shape_check="fail",
        reward_scheme="ladder",
        reward_params={"incorrect": -0.5},
        timeout_s=12.5,
    )
    request = EvalRequest(
        "import torch\n", "```python\nx = 1\n```", entry_point="Net", device="cuda:1", options=options
    )
    restored = EvalRequest.from_dict(json.loads(request.to_json()))
    assert restored == request
    assert restored.options.reward_params == {"incorrect": -0.5}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_trials": 0}, "num_trials"),
        ({"atol_fp32": -1.0}, "atol_fp32"),
        ({"shape_check": "maybe"}, "shape_check"),
        ({"reward_scheme": "fast"}, "reward_scheme"),
        ({"hacked_penalty": 0.5}, "hacked_penalty"),
        ({"min_timed_calls": 10, "max_timed_calls": 5}, "min_timed_calls"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"reward_params": {"w_sped": 1.0}}, "w_sped"),
    ],
)
def test_bad_values_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        EvalOptions(**kwargs)


def test_unknown_keys_are_rejected():
    with pytest.raises(ValueError, match="num_trails"):
        EvalOptions.from_dict({"num_trails": 3})
    with pytest.raises(ValueError, match="candidat"):
        EvalRequest.from_dict({"reference_code": "x", "candidat": "y"})


def test_request_validation():
    with pytest.raises(ValueError, match="reference_code"):
        EvalRequest("", "code")
    with pytest.raises(ValueError, match="device"):
        EvalRequest("ref", "code", device="tpu")
    with pytest.raises(ValueError, match="entry_point"):
        EvalRequest("ref", "code", entry_point="not valid")


def test_a_result_says_whether_it_was_scored_and_old_json_reads_the_same():
    """Infrastructure failures and cancellations are flagged by a field, not recognised from their error text;
    results written before the field existed get it from the rule readers used to apply."""
    from kernel_reward.result import EvalResult, Status
    from kernel_reward.trl import unscored

    infra = EvalResult.failure(Status.CRASHED, "infrastructure failure: no worker", scored=False)
    assert unscored(infra) and not EvalResult.from_dict(infra.to_dict()).scored
    candidate_crash = EvalResult.failure(Status.CRASHED, "the runner died (SIGSEGV)")
    assert not unscored(candidate_crash)
    legacy = infra.to_dict()
    del legacy["scored"]
    assert not EvalResult.from_dict(legacy).scored
    legacy_cancel = {**EvalResult.failure(Status.CRASHED, "stopped", flags=["cancelled"]).to_dict()}
    del legacy_cancel["scored"]
    assert not EvalResult.from_dict(legacy_cancel).scored
    legacy_crash = candidate_crash.to_dict()
    del legacy_crash["scored"]
    assert EvalResult.from_dict(legacy_crash).scored


def test_reward_scheme_names_agree_everywhere():
    """One list of scheme names: the options' Literal, the reward's parameter table, and the trainer config's
    Literal (trl_ext may not import kernel_reward, so it restates them and this test keeps them equal)."""
    from typing import get_args, get_type_hints

    from kernel_reward.options import REWARD_SCHEMES
    from kernel_reward.reward import SCHEME_PARAMS
    from trl_ext.config import MultiTurnKernelConfig

    trainer_names = get_args(get_type_hints(MultiTurnKernelConfig)["reward_scheme"])
    assert set(REWARD_SCHEMES) == set(SCHEME_PARAMS) == set(trainer_names)


def test_the_timeout_keyword_becomes_timeout_s_in_one_place():
    from kernel_reward.options import with_timeout

    assert with_timeout({"num_trials": 3}, None) == {"num_trials": 3}
    assert with_timeout({"num_trials": 3}, 7) == {"num_trials": 3, "timeout_s": 7.0}
    assert with_timeout({"timeout_s": 7.0}, 7) == {"timeout_s": 7.0}
    with pytest.raises(ValueError, match="timeout=5 and timeout_s=7.0 disagree"):
        with_timeout({"timeout_s": 7.0}, 5)
