"""The judge's clock against the launch ledger's records: where a record may count as a timed call's.

Two checks of one window (``judge.coverage``). The sum: a runner's gated calls run on one stream inside the judge's
work spans, so the window's kernel time fits in the spans' sum (``beyond_the_judges_clock``). The place:
``SpanStamps`` reads the GPU's clock (``common.gpu_clock``) just before each gated candidate batch and just after
it, outside its events, so the stamps cost the batch nothing; CUPTI's timestamps sit at a fixed offset from that
clock in the runner's process, learned with the runner's stream from the record of its own reading before any
candidate code (``runner_anchor``), and a record outside every batch's span, or on another stream, ran off the
timed calls (``split_by_spans``): between batches, or beside them from another thread.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from kernel_reward.common.gpu_clock import STAMP_KERNEL, stamp_kernel
from kernel_reward.ipc.ledger import LedgerChunk

CAPACITY = 4096  # batches per buffer before it grows behind a closed gate (an evaluation times a few hundred)


class SpanStamps:
    """Two readings of the GPU's clock per gated batch, queued on the current stream, read once at the end.

    Each reading has a 16-byte cell of its own: Triton specialises a pointer on its 16-byte alignment, so packed
    8-byte cells would compile a second variant of the kernel at the first closing stamp, behind a closed gate."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.buffers = [self._buffer()]
        self.count = 0  # batches closed
        self.counted: list[bool] = []  # per batch: its records count for coverage and the own-kernel count
        stamp_kernel()[(1,)](self.buffers[0][0, 0, 0])  # compiled here, not behind a closed gate
        torch.cuda.synchronize(device)

    def _buffer(self) -> torch.Tensor:
        return torch.zeros(CAPACITY, 2, 2, dtype=torch.int64, device=self.device)  # [batch, open/close, cell]

    def _slot(self, end: int) -> torch.Tensor:
        row = self.count % CAPACITY
        if row == 0 and self.count // CAPACITY == len(self.buffers):
            self.buffers.append(self._buffer())
        return self.buffers[self.count // CAPACITY][row, end, 0]

    def open(self, counted: bool = True) -> None:
        """Stamp a batch's start; ``counted``: its candidate calls owe own kernels (not an ablated or a dry batch,
        whose runner-side work is the harness's: the NaN writes that stand in for skipped launches)."""
        self.counted.append(counted)
        stamp_kernel()[(1,)](self._slot(0))

    def close(self) -> None:
        stamp_kernel()[(1,)](self._slot(1))
        self.count += 1

    def spans(self) -> list[tuple[int, int]]:
        """(open, close) ns of every batch stamped so far (synchronises the stream)."""
        rows = torch.cat(self.buffers)[: self.count, :, 0].tolist()
        return [(int(start), int(end)) for start, end in rows]


@dataclass(frozen=True)
class Anchor:
    """The runner's calls on the records' own terms: CUPTI's clock less the GPU's in the runner's process, and the
    stream its calls run on (None: any stream)."""

    offset_ns: int
    stream: int | None


def runner_anchor(opening: LedgerChunk, reading: int | None) -> Anchor | None:
    """Pure: the runner's anchor from the record of its one reading of the GPU's clock (``reading``, reported
    before any candidate code, on the stream its calls then run on) in the ledger's opening window; None without
    both. The earliest record of that name is the runner's: a candidate's kernel of the same name runs later."""
    stamps = [kernel for kernel in opening.kernels if kernel.name == STAMP_KERNEL]
    if reading is None or not stamps:
        return None
    first = min(stamps, key=lambda kernel: kernel.start_ns)
    return Anchor(first.start_ns - reading, first.stream)


# A record's edges against a span's stamps: the offset's spread (0.4 us) and the stamps' own launch.
SPAN_SLACK_NS = 5_000
ANY_STREAM = Anchor(0, None)


def split_by_spans(
    chunk: LedgerChunk,
    spans: list[tuple[int, int]],
    anchor: Anchor = ANY_STREAM,
    slack_ns: int = SPAN_SLACK_NS,
) -> tuple[LedgerChunk, LedgerChunk]:
    """Pure: ``chunk``'s records that ran inside one of ``spans`` (the judge's stamps around each gated batch, on the
    GPU's clock; a record's time less ``anchor.offset_ns`` is on that clock) on the runner's stream, and those that
    did not (start and end both within a span, give or take ``slack_ns``; another stream's record is out even inside
    one: it ran beside the calls, costing them nothing). What was dropped or malformed stays with the first."""
    ordered = sorted(spans)
    starts = [start for start, _ in ordered]
    inside, outside = [], []
    for kernel in chunk.kernels:
        start, end = kernel.start_ns - anchor.offset_ns, kernel.end_ns - anchor.offset_ns
        at = bisect.bisect_right(starts, start + slack_ns) - 1
        held = at >= 0 and end <= ordered[at][1] + slack_ns
        held = held and anchor.stream in (None, kernel.stream)
        (inside if held else outside).append(kernel)
    return dataclasses.replace(chunk, kernels=inside), LedgerChunk(chunk.marker, outside)


@dataclass(frozen=True)
class ClockReading:
    """What the judge's clock timed of the candidate's gated batches (their work spans: the hand-over to the runner
    and back), and how many messages the runner had that no gate held (each may have run kernels off the clock)."""

    work_ms: float
    batches: int
    unclocked_messages: int

    def since(self, earlier: ClockReading) -> ClockReading:
        return ClockReading(
            self.work_ms - earlier.work_ms,
            self.batches - earlier.batches,
            self.unclocked_messages - earlier.unclocked_messages,
        )


def read_clock(clock: Any, client: Any) -> ClockReading | None:
    """The judge's clock's totals so far, or None for a clock without gates (the host clock times no GPU span)."""
    if clock is None or clock.gate is None:
        return None
    return ClockReading(clock.gated_candidate_ms, clock.gated_candidate_batches, client.unclocked_messages)


CLOCK_TOLERANCE = 0.02  # the events' and CUPTI's timestamps, relative
CLOCK_SLACK_PER_BATCH_MS = 0.002  # and absolute, per gated batch (an event's resolution is about 0.5 us)


def beyond_the_judges_clock(kernel_ms: float, clock: ClockReading) -> str | None:
    """Pure: why the window's kernels cannot all be the gated batches' work, or None. A runner's calls run on one
    stream inside the judge's work spans, so their kernels' device time fits in the spans' sum; more means kernels
    that ran off the clock (between batches, on another stream or from another thread), whose records would
    otherwise count as the timed calls' own launches and coverage."""
    allowed = clock.work_ms * (1 + CLOCK_TOLERANCE) + clock.batches * CLOCK_SLACK_PER_BATCH_MS
    if kernel_ms <= allowed:
        return None
    return (
        f"the candidate's process ran {kernel_ms:.3f} ms of kernels during the timed phase, more than the "
        f"judge's clock timed for its {clock.batches} batches ({clock.work_ms:.3f} ms): kernels ran outside the "
        "timed calls (between batches, on another stream or from another thread)"
    )
