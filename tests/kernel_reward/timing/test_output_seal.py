"""The candidate's outputs are sealed inside the timing window and compared from a snapshot afterwards
(``output_seal``, ``BatchClock.check_candidate``): what is compared must be what the window ended with."""

from __future__ import annotations

import types

import pytest
import torch

from kernel_reward.ipc import exchange
from kernel_reward.judge.compare import PiecewiseComparison
from kernel_reward.judge.remote import output_spec, slot_bytes
from kernel_reward.options import EvalOptions
from kernel_reward.timing import batch_clock
from kernel_reward.timing.batch_clock import BatchClock, time_interleaved
from kernel_reward.timing.output_seal import SealKey, fingerprint, fingerprint_reference
from kernel_reward.timing.statistics import TimingValidationError


def test_a_fingerprint_adds_up_over_chunks_and_changes_with_any_word_and_with_the_key():
    region = torch.randint(0, 256, (4096,), dtype=torch.uint8)
    key = SealKey.draw()
    whole = fingerprint(region, key)
    parts = fingerprint(region[:1024], key) + fingerprint(region[1024:], key, first_word=1024 // 4)
    assert int(parts) == int(whole)
    for byte in (0, 1, 2047, 4095):  # any byte of any word: its term's multiplier is odd, so it cannot vanish
        changed = region.clone()
        changed[byte] ^= 0x80
        assert int(fingerprint(changed, key)) != int(whole)
    swapped = region.clone()  # moving words around changes their positions' multipliers
    swapped[:4], swapped[4:8] = region[4:8].clone(), region[:4].clone()
    assert torch.equal(region[:4], region[4:8]) or int(fingerprint(swapped, key)) != int(whole)
    assert int(fingerprint(region, SealKey.draw())) != int(whole)
    assert int(fingerprint_reference(region.view(torch.int32), key)) == int(whole)


def test_a_seal_reads_whole_words_of_a_flat_byte_region():
    with pytest.raises(ValueError, match="4-byte words"):
        fingerprint(torch.zeros(10, dtype=torch.uint8), SealKey.draw())
    with pytest.raises(ValueError, match="flat contiguous uint8"):
        fingerprint(torch.zeros(8, dtype=torch.float32), SealKey.draw())


def reference(x, y):
    return torch.relu(x + y), (x * y).to(torch.float64), (x > 0).sum(dim=1)  # three dtypes, three sizes


def draw(seed: int) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(64, 33, generator=generator), torch.randn(64, 33, generator=generator)]


class Runner:
    """Stands in for the runner process on the host clock: answers each timed batch by writing the outputs into
    the arena's slots (``late``: garbage before its reply, the right answer only after the window)."""

    def __init__(
        self, clock: BatchClock, late: bool = False, wrong_at: tuple[int, int] | None = None
    ) -> None:
        self.clock, self.late, self.wrong_at = clock, late, wrong_at
        self.pending: list[tuple[torch.Tensor, torch.Tensor]] = []

    def ask(self, message, expect):
        self.write_pending()  # the last batch's late answer, long after its window
        if message.get("dry"):
            return {"type": "ran", "calls": []}
        slot_args, _ = self.clock.slots
        for call, outs in enumerate(self.clock.arena_outputs):
            args = exchange.decode_args(slot_args[call], self.clock.region)  # slots from the batch's base
            for index, (slot, value) in enumerate(zip(outs, reference(*args), strict=True)):
                value = value.clone()
                if self.wrong_at == (call, index):
                    value.view(-1)[-1] += 1  # the very last value of one call's output
                if self.late:
                    slot.zero_()
                    self.pending.append((slot, value))
                else:
                    slot.copy_(value)
        return {"type": "ran", "calls": [{"ok": True, "own": ["kernel"]}] * len(self.clock.arena_outputs)}

    def write_pending(self) -> None:
        for slot, value in self.pending:
            slot.copy_(value)
        self.pending = []


@pytest.fixture
def clock(monkeypatch):
    monkeypatch.setattr(batch_clock, "SNAPSHOT_BYTES", 4096)  # outputs split over many snapshot chunks
    spec = output_spec(reference(*draw(0)))
    calls = 3
    arena = exchange.Arena(calls * slot_bytes(draw(0), spec), torch.device("cpu"))
    clock = BatchClock(reference, arena, spec, torch.device("cpu"), 0, lambda seed: draw(seed + 1))
    clock.prepare(calls)
    assert clock.snapshot.numel() == 4096 < clock.used - clock.inputs_end
    yield clock
    arena.close()


def compare(outputs):
    return PiecewiseComparison(outputs, EvalOptions().tolerance, 0.0, measure_error=False)


def test_honest_outputs_pass_whatever_chunks_the_snapshot_cuts_them_into(clock):
    time_interleaved(
        clock, types.SimpleNamespace(model_id=0, own_kernels_required=True), Runner(clock), 4, compare
    )


def test_one_wrong_value_in_the_last_call_is_found(clock):
    with pytest.raises(TimingValidationError, match="output 0: 1 of 6336 values outside"):
        time_interleaved(
            clock,
            types.SimpleNamespace(model_id=0, own_kernels_required=True),
            Runner(clock, wrong_at=(2, 0)),
            2,
            compare,
        )
    with pytest.raises(TimingValidationError, match="output 2: integer/bool values differ"):
        time_interleaved(
            clock,
            types.SimpleNamespace(model_id=0, own_kernels_required=True),
            Runner(clock, wrong_at=(1, 2)),
            2,
            compare,
        )


def test_an_answer_written_after_the_window_breaks_the_seal(clock, monkeypatch):
    """The forged-``done`` pattern: the batch ends with the slots unwritten, and the right answer lands after the
    window, before the judge reads the outputs for comparison. The values compared are right; the seal is not."""
    runner = Runner(clock, late=True)
    check = clock.check_candidate

    def after_the_window(comparison):
        runner.write_pending()
        return check(comparison)

    monkeypatch.setattr(clock, "check_candidate", after_the_window)
    with pytest.raises(TimingValidationError, match="changed after the judge's clock stopped"):
        time_interleaved(
            clock, types.SimpleNamespace(model_id=0, own_kernels_required=True), runner, 2, compare
        )


@pytest.mark.gpu
def test_the_triton_kernel_agrees_with_the_torch_arithmetic():
    key = SealKey.draw()
    for words in (1, 4095, 4096, 4097, 3 * 4096 + 17, 1 << 22):
        region = torch.randint(0, 256, (4 * words,), dtype=torch.uint8, device="cuda")
        on_gpu = fingerprint(region, key, first_word=12345)
        in_torch = fingerprint_reference(region.view(torch.int32), key, first_word=12345)
        assert int(on_gpu) == int(in_torch), words
        assert int(fingerprint(region.cpu(), key, first_word=12345)) == int(on_gpu), words
