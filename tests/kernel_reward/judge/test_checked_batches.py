"""The checked K-call messages of the correctness checks (``correctness._check_batches``): a candidate that behaves
one way in one-call messages and another in K-call ones is checked on both paths. The runner is stood in for by
stubs that answer every call from the arena; nothing runs under the interpreter."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from kernel_reward.ipc import exchange
from kernel_reward.judge import correctness
from kernel_reward.judge.remote import RemoteCandidate, output_spec, slot_bytes
from kernel_reward.options import EvalOptions
from kernel_reward.result import Status

CALLS = 4


class Model(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


def get_inputs():
    return [torch.randn(64), torch.randn(64)]


class Runner:
    """Answers each call by writing into its output place: ``batched`` (a K-call message) picks the answer."""

    def __init__(self, arena: exchange.Arena, answer) -> None:
        self.arena, self.answer = arena, answer

    def ask(self, message: dict, expect: tuple) -> dict:
        if message["type"] == "reset_buffers":
            return {"type": "buffers_reset", "restored": 0}
        batched = len(message["calls"]) > 1
        for call in message["calls"]:
            x, y = exchange.decode_args(call["args"], self.arena.tensor)
            (out,) = [exchange.view(self.arena.tensor, exchange.TensorRef.from_json(r)) for r in call["out"]]
            answer = self.answer(x, y, batched=batched, ablated=call["ablate"])
            if answer is not None:
                out.copy_(answer)
        return {"type": "ran", "calls": [{"ok": True, "own": ["kernel"]}] * len(message["calls"])}


def honest(x, y, *, batched, ablated):
    return None if ablated else torch.relu(x + y)  # ablated: its kernel never wrote the output


def torch_when_batched(x, y, *, batched, ablated):
    """Its own kernel in one-call messages; in K-call ones a trivial kernel (skipped when ablated) and torch."""
    return torch.relu(x + y) if batched or not ablated else None


def wrong_when_batched(x, y, *, batched, ablated):
    return None if ablated else (x + y if batched else torch.relu(x + y))


def check(answer, decoy_check: bool = True) -> correctness.CorrectnessReport:
    spec = output_spec(Model()(*get_inputs()))
    arena = exchange.Arena(2 * CALLS * slot_bytes(get_inputs(), spec), torch.device("cpu"))
    try:
        candidate = RemoteCandidate(Runner(arena, answer), arena, spec, calls_per_batch=CALLS)
        task = correctness.JudgeTask(SimpleNamespace(get_inputs=get_inputs), Model(), candidate, [])
        options = EvalOptions(num_trials=2, seed_base=7, decoy_check=decoy_check)
        return correctness.check_correctness(task, torch.device("cpu"), options, [11, 12, 13], decoy_seed=5)
    finally:
        arena.close()


def test_an_honest_candidate_passes_the_checked_batches():
    report = check(honest)
    assert report.passed, report.stop
    assert report.details["decoy_check"] == "passed" and report.details["batch_calls"] == CALLS


def test_torch_behind_a_trivial_kernel_in_k_call_batches_is_a_decoy():
    report = check(torch_when_batched)
    assert report.stop.status == Status.HACKED and report.stop.hack_reasons == ["decoy_kernel"]
    assert "-call batch" in str(report.stop)


@pytest.mark.parametrize("decoy_check", [True, False])
def test_a_candidate_wrong_only_in_k_call_batches_is_incorrect(decoy_check):
    report = check(wrong_when_batched, decoy_check)
    assert report.stop.status == Status.INCORRECT
    assert f"of a {CALLS}-call batch (right in one-call trials)" in str(report.stop)
