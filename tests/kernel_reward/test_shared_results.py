"""Identical requests of one batch evaluated once (``Evaluator.evaluate_many(share_identical=True)``, the RL
environment's default): a GRPO group often holds the same completion several times (22-45 % of the samples of the
pre-registered experiment's test-set evaluations), and each copy would cost a full evaluation and draw its own
timing noise. Only requests equal in every field share; each copy is a result of its own, flagged."""

from __future__ import annotations

import pytest

from kernel_reward.evaluator import Evaluator
from kernel_reward.request import EvalRequest, identical_groups
from kernel_reward.result import EvalResult, Status


def test_each_request_points_at_the_first_request_identical_to_it():
    a, b = EvalRequest("ref", "code a"), EvalRequest("ref", "code b")
    same_as_a = EvalRequest("ref", "code a")
    other_reference = EvalRequest("ref 2", "code a")
    other_options = EvalRequest("ref", "code a", options={"reward_scheme": "ladder"})
    other_entry = EvalRequest("ref", "code a", entry_point="Net")
    batch = [a, b, same_as_a, other_reference, other_options, other_entry, same_as_a, b]
    assert identical_groups(batch) == [0, 1, 0, 3, 4, 5, 0, 1]
    assert identical_groups([]) == []


class RecordingBackend:
    """Answers each submitted job at once with a result naming its candidate, and counts the jobs."""

    capacity = 4

    def __init__(self) -> None:
        self.submitted: list[str] = []

    def submit(self, job) -> None:
        self.submitted.append(job.request.candidate)
        job.future.set_running_or_notify_cancel()
        job.future.set_result(EvalResult(status=Status.CORRECT, error=job.request.candidate))

    def close(self) -> None:
        pass


@pytest.fixture
def evaluator():
    with Evaluator(device="cpu", workers=1) as ev:
        real, ev.backend = ev.backend, RecordingBackend()
        screen, ev._screen = ev._screen, None  # these candidates are names, not programs: no screen
        yield ev
        ev.backend, ev._screen = real, screen


def test_identical_requests_are_evaluated_once_and_each_gets_its_own_flagged_copy(evaluator):
    pairs = [("ref", "a"), ("ref", "b"), ("ref", "a"), ("ref", "a")]
    results = evaluator.evaluate_many(pairs, share_identical=True)
    assert evaluator.backend.submitted == ["a", "b"]
    assert [r.error for r in results] == ["a", "b", "a", "a"]
    assert results[0].flags == [] and results[1].flags == []
    assert results[2].flags == ["shared_result: the evaluation of identical request 0 of this batch"]
    results[2].flags.append("mutated")  # copies, not one object three times
    assert "mutated" not in results[3].flags and "mutated" not in results[0].flags


def test_without_sharing_every_request_is_evaluated(evaluator):
    evaluator.evaluate_many([("ref", "a"), ("ref", "a")])
    assert evaluator.backend.submitted == ["a", "a"]


def test_the_kernel_environment_shares_by_default_and_can_be_told_not_to(evaluator):
    from kernel_reward.env import KernelEnvironment

    row = {"reward_model": {"ground_truth": "ref"}, "extra_info": {"uuid": "t"}}
    env = KernelEnvironment(evaluator)
    env.step(env.reset([row] * 3), ["a", "a", "b"])
    assert evaluator.backend.submitted == ["a", "b"]
    unshared = KernelEnvironment(evaluator, share_identical=False)
    unshared.step(unshared.reset([row] * 2), ["a", "a"])
    assert evaluator.backend.submitted == ["a", "b", "a", "a"]
