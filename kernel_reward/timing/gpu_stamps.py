"""The GPU's own clock (``%globaltimer``, ns) read on the judge's stream: the spans that tie the launch ledger's
records to the gated batches the judge timed.

``SpanStamps`` queues one stamp just before the judge's hand-over writes the runner's flag and one just after its
stream sees the runner's ``done`` word: every kernel of the runner's batch runs between the two. CUPTI's records
carry their start and end on the same clock (``benchmarks/ledger_clock_probe.py`` measures that), so a record
outside every span ran off the timed calls: between batches, or from another thread. The stamps are queued only
where the ledger is on (``CoverageMeasure`` asks), and inside the batch's work span, which the calibration's dry
batches share, so they are part of the fixed cost it takes out.
"""

from __future__ import annotations

import functools

import torch

CAPACITY = 1024  # batches per buffer before it grows (an evaluation times a few hundred at most)


@functools.cache
def _stamp_kernel():  # compiled on first use: only a judge with a ledger needs it
    import triton
    import triton.language as tl

    @triton.jit
    def judge_clock_stamp(out_ptr):
        now = tl.inline_asm_elementwise(
            "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
        )
        tl.store(out_ptr, now)

    return judge_clock_stamp


class SpanStamps:
    """Two ``%globaltimer`` readings per gated batch, queued on the current stream, read once at the end."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.buffers = [torch.zeros(CAPACITY, 2, dtype=torch.int64, device=device)]
        self.count = 0  # batches closed
        _stamp_kernel()[(1,)](self.buffers[0][0, 0])  # compiled here, not behind a closed gate
        torch.cuda.synchronize(device)

    def _slot(self, end: int) -> torch.Tensor:
        row = self.count % CAPACITY
        if row == 0 and self.count // CAPACITY == len(self.buffers):
            self.buffers.append(torch.zeros(CAPACITY, 2, dtype=torch.int64, device=self.device))
        return self.buffers[self.count // CAPACITY][row, end]

    def open(self) -> None:
        _stamp_kernel()[(1,)](self._slot(0))

    def close(self) -> None:
        _stamp_kernel()[(1,)](self._slot(1))
        self.count += 1

    def spans(self) -> list[tuple[int, int]]:
        """(open, close) ns of every batch stamped so far (synchronises the stream)."""
        rows = torch.cat(self.buffers)[: self.count].tolist()
        return [(int(start), int(end)) for start, end in rows]
