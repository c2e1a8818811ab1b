"""Where the judge places a call's tensors in the exchange arena (kernel_reward.judge.remote.RemoteCandidate.place)."""

from __future__ import annotations

import torch

from kernel_reward.ipc import exchange
from kernel_reward.judge.remote import RemoteCandidate, output_spec, slot_bytes


def _ranges(refs: list[exchange.TensorRef]) -> list[tuple[int, int]]:
    return [(ref.offset, ref.offset + ref.nbytes) for ref in refs]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_a_calls_outputs_never_overlap_its_inputs_whatever_the_arena_held_before():
    # An arena with room for exactly one call (what a large task gets), left by an earlier, smaller placement at
    # an offset where the input still fits at the end but the output does not: the output must not wrap onto it.
    inputs = [torch.randn(4096)]
    spec = output_spec(torch.randn(4096))
    arena = exchange.Arena(slot_bytes(inputs, spec), torch.device("cpu"))
    candidate = RemoteCandidate(client=None, arena=arena, spec=spec)
    try:
        for used in range(0, arena.layout.capacity, exchange.ALIGN):
            arena.layout.used = used
            encoded, outs = candidate.place(inputs)
            placed_inputs = [exchange.TensorRef.from_json(item["tensor"]) for item in encoded]
            for out in _ranges(outs):
                assert out[1] <= arena.layout.capacity
                assert not any(_overlap(out, inp) for inp in _ranges(placed_inputs)), (
                    f"overlap after used={used}"
                )
    finally:
        arena.close()
