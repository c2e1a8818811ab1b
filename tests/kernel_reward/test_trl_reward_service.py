"""The TRL reward function with a fake GRPO-style call: rows' reference from ``reward_model``, entry point from
``extra_info``, parallel evaluation, floats back, metrics through ``log_metric``, None when unscorable."""

from __future__ import annotations

import collections
import pickle

import pytest

from kernel_reward.trl import KernelReward, batch_metrics
from tests.support import service_programs as programs


@pytest.fixture(scope="module")
def reward():
    fn = KernelReward(device="cpu", timeout=30, evaluator_kwargs={"workers": 2}, num_trials=2)
    yield fn
    fn.close()


def test_grpo_style_call(reward):
    completions = [
        programs.fenced(programs.CANDIDATE_ADD),
        programs.fenced(programs.CANDIDATE_WRONG),
        [{"role": "assistant", "content": programs.fenced(programs.CANDIDATE_ADD)}],  # conversational form
        programs.fenced(programs.CANDIDATE_SYNTAX_ERROR),
        "no code block at all",
    ]
    n = len(completions)
    metrics: dict[str, list[float]] = collections.defaultdict(list)
    extra: dict[str, list] = {}
    rewards = reward(
        prompts=[[{"role": "user", "content": "write a kernel"}]] * n,
        completions=completions,
        completion_ids=[[1, 2]] * n,
        reward_model=[{"style": "rule", "ground_truth": programs.REFERENCE_ADD}] * n,
        extra_info=[{"entry_point": "Model", "uuid": f"u{i}"} for i in range(n)],
        trainer_state=None,
        log_metric=lambda name, value: metrics[name].append(value),
        log_extra=lambda column, values: extra.__setitem__(column, values),
    )
    assert len(rewards) == n and all(isinstance(r, float) for r in rewards)
    statuses = extra["kernel_status"]
    assert statuses == ["correct", "incorrect", "correct", "compile_error", "format_error"]
    assert rewards[0] > 0 and rewards[0] == rewards[2]
    assert rewards[1] < rewards[0] and rewards[3] < rewards[0] and rewards[4] < rewards[0]
    assert metrics["kernel/correct_rate"] == [pytest.approx(2 / 5)]
    assert metrics["kernel/compile_rate"] == [pytest.approx(3 / 5)]
    assert metrics["kernel/hacked_rate"] == [0.0]
    assert metrics["kernel/unscored_rate"] == [0.0]
    assert "kernel/mean_speedup" not in metrics  # no timing on the CPU interpreter
    # Small and picklable even after use (worker processes of a trainer get their own evaluator).
    clone = pickle.loads(pickle.dumps(reward))
    assert clone._evaluator is None and clone.options == reward.options


def test_trl_names_the_reward_after_us():
    # trl.trainer.utils.get_callable_name reads __name__ (falling back to the class name).
    assert KernelReward().__name__ == "kernel_reward"


def test_missing_reference_is_a_clear_error(reward):
    with pytest.raises(ValueError, match="reward_model"):
        reward(completions=["x"])
    with pytest.raises(ValueError, match="row 0 has no reference"):
        reward(completions=["x"], reward_model=[{"style": "rule"}])


def test_unscorable_rows_return_none():
    fn = KernelReward(
        device="cpu",
        timeout=5,
        evaluator_kwargs={
            "workers": 1,
            "max_attempts": 1,
            "worker_module": "tests.support.service_fake_worker",
            "pool_options": {"env": {"FAKE_WORKER_FAIL_WARMUP": "1"}},
        },
    )
    metrics = {}
    try:
        rewards = fn(
            completions=["a"],
            reward_model=[{"ground_truth": "ref"}],
            log_metric=lambda name, value: metrics.__setitem__(name, value),
        )
    finally:
        fn.close()
    assert rewards == [None]
    assert metrics["kernel/unscored_rate"] == 1.0 and "kernel/correct_rate" not in metrics


def test_batch_metrics_means_over_correct_results_only():
    from kernel_reward.result import EvalResult, Status

    results = [
        EvalResult(status=Status.CORRECT, compiled=True, correct=True, speedup=2.0, coverage=0.5),
        EvalResult(status=Status.CORRECT, compiled=True, correct=True, speedup=1.0, coverage=1.0),
        EvalResult(status=Status.INCORRECT, compiled=True, speedup=9.0),
        EvalResult(status=Status.HACKED, compiled=True, hacked=True),
    ]
    m = batch_metrics(results)
    assert m["kernel/mean_speedup"] == 1.5 and m["kernel/mean_coverage"] == 0.75
    assert (
        m["kernel/correct_rate"] == 0.5
        and m["kernel/hacked_rate"] == 0.25
        and m["kernel/compile_rate"] == 1.0
    )


def test_identical_completions_of_a_call_are_judged_once_unless_asked_otherwise():
    """A GRPO group often repeats a completion: the reward asks the evaluator to judge identical requests once
    (``Evaluator.evaluate_many(share_identical=True)``); ``share_identical=False`` judges every copy."""
    from kernel_reward.result import EvalResult, Status

    class Recording:
        def __init__(self):
            self.asked = []

        def evaluate_many(self, pairs, share_identical=False):
            self.asked.append(share_identical)
            return [EvalResult(status=Status.INCORRECT, compiled=True) for _ in pairs]

    for share in (True, False):
        fn = KernelReward() if share else KernelReward(share_identical=False)  # the default shares
        fn._evaluator = Recording()
        fn(completions=["a", "a"], reward_model=[{"ground_truth": "ref"}] * 2)
        assert fn._evaluator.asked == [share]
        assert pickle.loads(pickle.dumps(fn)).share_identical is share
