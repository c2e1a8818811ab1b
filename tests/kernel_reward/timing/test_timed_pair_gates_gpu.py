"""The gates of a timed pair (judge_timing.BatchClock.time_pair) on the GPU.

* A reference that synchronises the host inside its forward (an ``.item()``; cuDNN's large transposed convolutions
  on the H100) is timed to the end: the runner gets its message as soon as its hand-over is queued. Before, every
  candidate-first pair deadlocked until the wall clock.
* A candidate whose runner holds its reply past the watchdog's delay gains nothing: the reference is never queued
  behind a gate that was closed before the runner was asked (else that gate opens while the reference is still
  being queued, and its launch latency is timed as its work).
"""

from __future__ import annotations

import pytest

from kernel_reward.evaluator import Evaluator
from kernel_reward.result import Status
from tests.support import service_programs as programs

pytestmark = pytest.mark.gpu

SYNCING_REFERENCE = programs.REFERENCE_ADD.replace(
    "        return a + b",
    "        out = a + b\n        assert out.abs().sum().item() >= 0  # a host sync\n        return out",
)

# The honest add kernel, whose process holds every "ran" reply for 30 ms (the watchdog opens a gate after 20 ms);
# the runner's wire module reached through torch's sys.modules, spelled past the static screen (not the boundary).
HELD_REPLY = programs.CANDIDATE_ADD.replace(
    "\n\n@triton.jit",
    """

def _hold_replies():
    modules = getattr(getattr(torch, "s" + "ys"), "mod" + "ules")
    wire, time_ = modules["kernel_reward.ipc.wire"], modules["ti" + "me"]
    original = wire.send_message

    def send_message(sock, message):
        if isinstance(message, dict) and message.get("type") == "ran":
            time_.sleep(0.03)
        return original(sock, message)

    wire.send_message = send_message


_hold_replies()


@triton.jit""",
    1,
)


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(device="cuda:0", workers=1, timeout=90) as ev:
        yield ev


def test_a_reference_that_syncs_the_host_is_timed_to_the_end(evaluator):
    assert SYNCING_REFERENCE != programs.REFERENCE_ADD
    result = evaluator.evaluate(SYNCING_REFERENCE, programs.fenced(programs.CANDIDATE_ADD))
    assert result.status is Status.CORRECT, (result.status, result.error)
    assert result.kernel_timing is not None and result.speedup is not None and result.speedup > 0


def test_a_held_reply_does_not_slow_the_reference(evaluator):
    assert HELD_REPLY != programs.CANDIDATE_ADD
    honest = evaluator.evaluate(programs.REFERENCE_ADD, programs.fenced(programs.CANDIDATE_ADD))
    held = evaluator.evaluate(programs.REFERENCE_ADD, programs.fenced(HELD_REPLY))
    assert honest.status is Status.CORRECT and held.status in (Status.CORRECT, Status.HACKED), (
        held.status,
        held.error,
    )
    if held.status is Status.CORRECT:
        assert held.speedup <= 1.25 * honest.speedup, (honest.speedup, held.speedup, held.flags)
