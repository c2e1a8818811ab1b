"""The judge's stamps of the GPU's clock (``timing.ledger_clock``) on a real GPU: each pair brackets the work queued
between its two stamps, pairs come in order, and the buffer grows past its capacity."""

from __future__ import annotations

import pytest


@pytest.mark.gpu
def test_stamps_bracket_the_work_queued_between_them(monkeypatch):
    import torch

    from kernel_reward.timing import ledger_clock

    monkeypatch.setattr(ledger_clock, "CAPACITY", 2)  # three batches: the buffer grows once
    stamps = ledger_clock.SpanStamps(torch.device("cuda"))
    for _ in range(3):
        stamps.open()
        torch.cuda._sleep(200_000)  # some 100 us of GPU time between the stamps
        stamps.close()
    spans = stamps.spans()
    assert len(spans) == 3 and len(stamps.buffers) == 2
    assert all(20_000 < end - start < 50_000_000 for start, end in spans), spans
    assert all(spans[i][1] <= spans[i + 1][0] for i in range(2)), spans
