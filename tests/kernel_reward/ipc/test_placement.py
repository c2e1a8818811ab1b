"""Timed calls look like checked ones to the runner (kernel_reward.ipc.placement): the same message fields, the
same places in the arena, the same neighbours. The runner and its reply are stood in for; nothing is timed."""

from __future__ import annotations

import pytest
import torch

from kernel_reward.ipc import exchange
from kernel_reward.judge.remote import RemoteCandidate, output_spec, slot_bytes
from kernel_reward.options import EvalOptions
from kernel_reward.timing.batch_clock import BatchClock

CALLS = 4  # per batch
DRAWS = 200  # messages sampled per kind: every one of CALLS places is seen with probability 1 - 4 * (3/4)^200


def draw(seed: int) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(40, 8, generator=generator), 0.5, torch.randn(40, 8, generator=generator)]


def reference(x, scale, y):
    return x * scale + y


class Client:
    """Stands in for the runner: keeps every run message, and answers each call by writing the reference's output
    for the inputs it was handed into the output place it was named."""

    def __init__(self, arena: exchange.Arena) -> None:
        self.arena = arena
        self.messages: list[dict] = []

    def ask(self, message: dict, expect: tuple) -> dict:
        self.messages.append(message)
        for call in message["calls"]:
            args = exchange.decode_args(call["args"], self.arena.tensor)
            (out,) = [exchange.view(self.arena.tensor, exchange.TensorRef.from_json(r)) for r in call["out"]]
            out.copy_(reference(*args))
        return {"type": "ran", "calls": [{"ok": True, "own": ["kernel"]}] * len(message["calls"])}


@pytest.fixture
def setup():
    spec = output_spec(reference(*draw(0)))
    arena = exchange.Arena(2 * CALLS * slot_bytes(draw(0), spec), torch.device("cpu"))  # room for two grids
    client = Client(arena)
    clock = BatchClock(reference, arena, spec, torch.device("cpu"), 0, draw, reference_keeps_inputs=True)
    clock.prepare(CALLS)
    yield arena, spec, client, clock
    arena.close()


def timed_messages(clock: BatchClock, client: Client, count: int) -> list[dict]:
    client.messages.clear()
    for index in range(count):
        clock.stage()
        clock.time_pair(client, 0, candidate_first=index % 2 == 1)
    return list(client.messages)


def checked_messages(candidate: RemoteCandidate, client: Client, count: int) -> list[dict]:
    client.messages.clear()
    for seed in range(count):
        candidate.call(draw(seed))
    return list(client.messages)


def _first_input(call: dict) -> int:
    return call["args"][0]["tensor"]["o"]


def _input_to_output(call: dict) -> int:
    """Bytes from a call's first input to its output place (what lies between: its own inputs, or other calls')."""
    return call["out"][0]["o"] - _first_input(call)


def test_a_checked_call_and_a_timed_call_carry_the_same_fields(setup):
    arena, spec, client, clock = setup
    candidate = RemoteCandidate(client, arena, spec)
    (checked,) = checked_messages(candidate, client, 1)
    (timed,) = timed_messages(clock, client, 1)
    assert set(checked) == set(timed)  # a gate is added on a GPU's clock only
    assert {key: type(value) for key, value in checked["calls"][0].items()} == {
        key: type(value) for key, value in timed["calls"][0].items()
    }
    for message in (checked, timed):
        assert message["dry"] is False
        assert all(call["ablate"] is False and call["monitor"] is True for call in message["calls"])


def test_timed_calls_are_not_laid_out_from_the_arenas_start(setup):
    """Every timed batch's slots at a base drawn afresh, its calls in an order drawn afresh: the first call of a
    batch is not told by its place."""
    arena, spec, client, clock = setup
    messages = timed_messages(clock, client, DRAWS)
    firsts = {_first_input(message["calls"][0]) for message in messages}
    assert len(firsts) > CALLS and any(offset != 0 for offset in firsts)
    assert all(offset % exchange.ALIGN == 0 for offset in firsts)
    # Every position of a batch sees every slot of the grid (the gap to its output place tells which)
    for position in range(CALLS):
        assert len({_input_to_output(m["calls"][position]) for m in messages}) == CALLS


def test_checked_and_timed_calls_find_the_same_neighbours(setup):
    """What lies between a call's inputs and its output place (its own output slot right after its inputs, or the
    inputs of other calls) is drawn from the same slots, checked or timed."""
    arena, spec, client, clock = setup
    candidate = RemoteCandidate(client, arena, spec, calls_per_batch=CALLS)
    timed = {_input_to_output(call) for m in timed_messages(clock, client, DRAWS) for call in m["calls"]}
    checked = {_input_to_output(m["calls"][0]) for m in checked_messages(candidate, client, DRAWS)}
    assert checked == timed and len(timed) == CALLS


def test_a_checked_batch_is_a_timed_batch_to_the_runner_and_reads_back_in_order(setup):
    """``call_batch``: as many calls as a timed batch, in the same places, every output place poisoned first; each
    outcome is the one of the input set at its index, whatever order the message took."""
    arena, spec, client, clock = setup
    candidate = RemoteCandidate(client, arena, spec, calls_per_batch=CALLS)
    sets = [draw(seed) for seed in range(CALLS)]
    timed_fields = set(timed_messages(clock, client, 1)[0])
    timed = {_input_to_output(call) for m in timed_messages(clock, client, 50) for call in m["calls"]}
    for _ in range(20):
        client.messages.clear()
        outcomes = candidate.call_batch(sets, ablate=True)
        (message,) = client.messages
        assert len(message["calls"]) == clock.calls == CALLS
        assert set(message) == timed_fields
        assert {_input_to_output(call) for call in message["calls"]} == timed
        assert all(call["ablate"] is True for call in message["calls"])
        for inputs, outcome in zip(sets, outcomes, strict=True):
            assert outcome.ok and not outcome.inputs_mutated
            assert outcome.outputs.compare([reference(*inputs)], EvalOptions().tolerance).ok


def test_every_output_place_of_the_grid_is_poisoned_before_a_checked_call(setup):
    arena, spec, client, clock = setup
    candidate = RemoteCandidate(client, arena, spec, calls_per_batch=CALLS)
    arena.tensor.view(torch.float32).fill_(1.0)
    encoded, outs = candidate.place(draw(0))
    grid_outputs = arena.tensor.view(torch.float32).isnan().sum().item()
    assert grid_outputs == CALLS * 40 * 8  # the call's own output place and the other slots' alike
