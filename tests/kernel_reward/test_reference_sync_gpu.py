"""A reference that synchronises the host inside its forward (an ``.item()``; cuDNN's large transposed convolutions
on the H100) is timed to the end: the judge's stream waits for the runner's word only once the runner has its
message (judge_timing.BatchClock.time_pair). Before, every candidate-first pair deadlocked until the wall clock."""

from __future__ import annotations

import pytest

from kernel_reward.evaluator import Evaluator
from kernel_reward.result import Status
from tests.support import service_programs as programs

pytestmark = pytest.mark.gpu

SYNCING_REFERENCE = programs.REFERENCE_ADD.replace(
    "        return a + b", "        out = a + b\n        assert out.abs().sum().item() >= 0  # a host sync\n        return out")


def test_a_reference_that_syncs_the_host_is_timed_to_the_end():
    assert SYNCING_REFERENCE != programs.REFERENCE_ADD
    with Evaluator(device="cuda:0", workers=1, timeout=60) as evaluator:
        result = evaluator.evaluate(SYNCING_REFERENCE, programs.fenced(programs.CANDIDATE_ADD))
    assert result.status is Status.CORRECT, (result.status, result.error)
    assert result.kernel_timing is not None and result.speedup is not None and result.speedup > 0
