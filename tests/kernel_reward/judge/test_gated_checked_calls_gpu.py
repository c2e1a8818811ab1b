"""On the GPU a checked call arrives as a timed one does (``ipc.handover``): queued behind the judge's closed gate,
so its stream has work pending when the forward starts, as in every timed batch. A candidate that answers wrongly
whenever its stream is idle at the start of a forward (a checked call, before) is therefore right in every call.
A checked call that synchronises the host waits for the gate's watchdog, as a timed one does, and is judged."""

from __future__ import annotations

import pytest

from kernel_reward.evaluator import Evaluator
from kernel_reward.result import Status
from tests.support import service_programs as programs

pytestmark = pytest.mark.gpu

# Adds 1 wherever the first forward of a run message starts on an idle stream: it marks each message's arrival by
# wrapping the runner's wire module (reached through torch's sys.modules, spelled past the static screen, as in
# test_timed_pair_gates_gpu.py). Only the first call is probed: in a K-call message whose queueing outlasts the
# watchdog's 20 ms, checked or timed, the gate opens early and later calls can start on an idle stream.
WRONG_ON_AN_IDLE_STREAM = (
    programs.CANDIDATE_ADD.replace(
        "\n\n@triton.jit",
        """

FIRST_CALL = [False]


def _mark_messages():
    wire = getattr(getattr(torch, "s" + "ys"), "mod" + "ules")["kernel_reward.ipc.wire"]
    original = wire.recv_message_blocking

    def recv(*args, **kwargs):
        message = original(*args, **kwargs)
        FIRST_CALL[0] = isinstance(message, dict) and message.get("type") == "run"
        return message

    wire.recv_message_blocking = recv


_mark_messages()


@triton.jit""",
        1,
    )
    .replace(
        "        out = torch.empty_like(a)\n",
        "        idle = FIRST_CALL[0] and torch.cuda.current_stream().query()\n"
        "        FIRST_CALL[0] = False\n"
        "        out = torch.empty_like(a)\n",
    )
    .replace("        return out\n", "        return out + 1.0 if idle else out\n")
)

SYNCS_THE_HOST = programs.CANDIDATE_ADD.replace(
    "        return out\n", "        assert out.abs().sum().item() >= 0  # a host sync\n        return out\n"
)


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(device="cuda:0", workers=1, timeout=90) as ev:
        yield ev


def test_no_checked_call_starts_on_an_idle_stream(evaluator):
    assert "query()" in WRONG_ON_AN_IDLE_STREAM and "FIRST_CALL[0] = False" in WRONG_ON_AN_IDLE_STREAM
    result = evaluator.evaluate(programs.REFERENCE_ADD, programs.fenced(WRONG_ON_AN_IDLE_STREAM))
    assert result.status is Status.CORRECT, (result.status, result.error)


def test_a_checked_call_that_syncs_the_host_is_judged(evaluator):
    assert ".item()" in SYNCS_THE_HOST
    result = evaluator.evaluate(programs.REFERENCE_ADD, programs.fenced(SYNCS_THE_HOST))
    print("syncing candidate", result.status.value, result.phase_seconds)
    assert result.status is Status.CORRECT, (result.status, result.error)
