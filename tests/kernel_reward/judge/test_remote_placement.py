"""Where the judge places a call's tensors in the exchange arena (kernel_reward.judge.remote.RemoteCandidate.place;
the layout itself: kernel_reward.ipc.placement)."""

from __future__ import annotations

import torch

from kernel_reward.ipc import exchange
from kernel_reward.judge.remote import RemoteCandidate, output_spec, slot_bytes


def _ranges(refs: list[exchange.TensorRef]) -> list[tuple[int, int]]:
    return [(ref.offset, ref.offset + ref.nbytes) for ref in refs]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_a_calls_outputs_never_overlap_its_inputs_wherever_its_grid_is_drawn():
    # An arena with room for one call and a little more (what a large task gets), a grid of two slots that does not
    # fit it (one slot then), and many bases drawn: no output may overlap an input or leave the arena.
    inputs = [torch.randn(4096)]
    spec = output_spec(torch.randn(4096))
    arena = exchange.Arena(slot_bytes(inputs, spec) + 8 * exchange.ALIGN, torch.device("cpu"))
    candidate = RemoteCandidate(client=None, arena=arena, spec=spec, calls_per_batch=2)
    try:
        bases = set()
        for _ in range(200):
            encoded, outs = candidate.place(inputs)
            placed_inputs = [exchange.TensorRef.from_json(item["tensor"]) for item in encoded]
            bases.add(placed_inputs[0].offset)
            for out in _ranges(outs):
                assert out[1] <= arena.nbytes
                assert not any(_overlap(out, inp) for inp in _ranges(placed_inputs))
        assert candidate.grid.calls == 1 and len(bases) > 1
    finally:
        arena.close()


def test_every_checked_message_goes_through_the_handover_where_the_arena_has_a_gate():
    """On a GPU a checked call's message waits behind the judge's gate as a timed batch's does (``ipc.handover``):
    one-call and K-call messages alike go to ``Handover.run``; without a gate (here, the CPU) the runner is asked
    directly."""
    inputs = [torch.randn(64)]
    spec = output_spec(torch.randn(64))
    arena = exchange.Arena(4 * slot_bytes(inputs, spec), torch.device("cpu"))
    sent: list[tuple[str, int]] = []

    def answer(message: dict) -> dict:
        return {"type": "ran", "calls": [{"ok": True, "own": ["k"]}] * len(message["calls"])}

    class Client:
        def ask(self, message: dict, expect: tuple) -> dict:
            sent.append(("direct", len(message["calls"])))
            return answer(message)

    class Handover:
        def run(self, client, message: dict) -> dict:
            sent.append(("handover", len(message["calls"])))
            return answer(message)

    try:
        candidate = RemoteCandidate(Client(), arena, spec, calls_per_batch=2)
        assert candidate.handover is None  # a CPU arena has no gate
        candidate.call(inputs)
        candidate.handover = Handover()
        candidate.call(inputs)
        candidate.call(inputs, reuse_buffers=True)
        candidate.call_batch([inputs, inputs])
    finally:
        arena.close()
    assert sent == [("direct", 1), ("handover", 1), ("handover", 1), ("handover", 2)]
