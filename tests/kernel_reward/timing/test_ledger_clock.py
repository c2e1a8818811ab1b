"""The judge's stamps of the GPU's clock (``timing.ledger_clock.SpanStamps``) with the stamping kernel replaced by
one that writes a counter: every reading lands in a 16-byte aligned cell (Triton compiles one variant per pointer
alignment, and a second one would compile behind the judge's closed gate), pairs come back in order, and the
buffer grows past its capacity. The real kernel on a GPU: ``test_ledger_clock_gpu.py``."""

from __future__ import annotations

import itertools

import torch

from kernel_reward.timing import ledger_clock


class CountingStamp:
    def __init__(self) -> None:
        self.ticks = itertools.count(100)
        self.pointers: list[int] = []

    def __getitem__(self, grid):
        def launch(cell: torch.Tensor) -> None:
            self.pointers.append(cell.data_ptr())
            cell.fill_(next(self.ticks))

        return launch


def test_each_reading_has_an_aligned_cell_and_pairs_come_back_in_order(monkeypatch):
    stamp = CountingStamp()
    monkeypatch.setattr(ledger_clock, "stamp_kernel", lambda: stamp)
    monkeypatch.setattr(ledger_clock, "CAPACITY", 2)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    stamps = ledger_clock.SpanStamps(torch.device("cpu"))
    for _ in range(3):
        stamps.open()
        stamps.close()
    assert stamps.spans() == [(101, 102), (103, 104), (105, 106)]  # 100: the warm-up launch
    assert len(stamps.buffers) == 2 and all(pointer % 16 == 0 for pointer in stamp.pointers)


def test_each_closed_batch_keeps_whether_it_counts_and_an_unclosed_one_leaves_no_trace(monkeypatch):
    monkeypatch.setattr(ledger_clock, "stamp_kernel", lambda: CountingStamp())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    stamps = ledger_clock.SpanStamps(torch.device("cpu"))
    stamps.open(counted=True)  # a batch that raised before its close
    stamps.open(counted=False)  # an ablated batch
    stamps.close()
    stamps.open()
    stamps.close()
    assert len(stamps.spans()) == 2 and stamps.counted == [False, True]
