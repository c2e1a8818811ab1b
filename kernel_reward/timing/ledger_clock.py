"""The judge's clock against the launch ledger's records: where a record may count as a timed call's.

Two checks of one window (``judge.coverage``). The sum: a runner's gated calls run on one stream inside the judge's
work spans, so the window's kernel time fits in the spans' sum (``beyond_the_judges_clock``). The place:
``SpanStamps`` reads the GPU's clock (``common.gpu_clock``) just before each gated candidate batch and just after
it, outside its events, so the stamps cost the batch nothing; CUPTI's timestamps sit at a fixed offset from that
clock in the runner's process that drifts slowly (H100s: -2 to +20 us a second), learned with the runner's stream from the
records of its two readings before any candidate code, at start-up and just before the candidate is loaded
(``runner_anchor``: the offset at the second, the drift between them), and a record outside every batch's span,
widened by what the drift's estimate leaves unknown, or on another stream, ran off the timed calls
(``split_by_spans``): between batches, or beside them from another thread.
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
        # per closed batch: whether its records count for coverage and the own-kernel count
        self.counted: list[bool] = []
        self._opened_counted = True
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
        self._opened_counted = counted
        stamp_kernel()[(1,)](self._slot(0))

    def close(self) -> None:
        """Stamp the opened batch's end (a batch that raised before this has no span; the next open reuses its row)."""
        stamp_kernel()[(1,)](self._slot(1))
        self.counted.append(self._opened_counted)
        self.count += 1

    def spans(self) -> list[tuple[int, int]]:
        """(open, close) ns of every batch stamped so far (synchronises the stream)."""
        rows = torch.cat(self.buffers)[: self.count, :, 0].tolist()
        return [(int(start), int(end)) for start, end in rows]


@dataclass(frozen=True)
class Anchor:
    """The runner's calls on the records' own terms: CUPTI's clock less the GPU's in the runner's process
    (``offset_ns`` when the GPU's clock read ``reading_ns``, changing by ``drift`` per ns of it, known to within
    ``drift_unknown`` per ns), and the stream its calls run on (None: any stream)."""

    offset_ns: int
    stream: int | None
    reading_ns: int = 0
    drift: float = 0.0
    drift_unknown: float = 0.0

    def place(self, record_ns: int) -> int:
        """Pure: a record's timestamp on the GPU's clock."""
        rough = record_ns - self.offset_ns
        return rough - round(self.drift * (rough - self.reading_ns))

    def unknown_ns(self, gpu_ns: int) -> int:
        """Pure: how far a placement at ``gpu_ns`` may be off, from the drift's uncertainty alone."""
        return round(self.drift_unknown * abs(gpu_ns - self.reading_ns))


# CUPTI's drift from the GPU's clock: -2.3 and +20.5 us a second on two H100s, the same in two processes of each
# (benchmarks/ledger_clock_probe.py); a drift estimated beyond this bound is not believed, and where none is
# measured the bound is the uncertainty.
MAX_DRIFT = 50e-6
MIN_DRIFT_UNKNOWN = 2e-6  # what a drift measured between two readings is never trusted better than
# a reading's record against its value: 0.4 us spread measured, twice for two readings
READING_JITTER_NS = 1_000


def runner_anchor(
    opening: LedgerChunk, reading: int | None, later_reading: int | None = None
) -> Anchor | None:
    """Pure: the runner's anchor from the records of its readings of the GPU's clock, both taken before any
    candidate code, on the stream its calls then run on: ``reading`` at start-up, ``later_reading`` just before the
    candidate is loaded (None when it was not taken). None without the first reading or its record. The earliest
    records of that name are the runner's: a candidate's kernel of the same name runs later. With both, the offset
    is the later one's and the drift is measured between them; with one, with a drift beyond the bound, or with two
    too close for the measurement to beat the bound, the offset is the start-up one's and the drift is unknown up to
    ``MAX_DRIFT``."""
    stamps = sorted(
        (kernel for kernel in opening.kernels if kernel.name == STAMP_KERNEL), key=lambda k: k.start_ns
    )
    if reading is None or not stamps:
        return None
    first = stamps[0]
    start_up = Anchor(first.start_ns - reading, first.stream, reading, 0.0, MAX_DRIFT)
    if later_reading is None or len(stamps) < 2 or later_reading <= reading:
        return start_up
    second = stamps[1]
    between = later_reading - reading
    drift = ((second.start_ns - later_reading) - (first.start_ns - reading)) / between
    unknown = max(READING_JITTER_NS / between, MIN_DRIFT_UNKNOWN)
    if abs(drift) > MAX_DRIFT or unknown >= MAX_DRIFT:
        # not believed (the second record may not be the reading's), or the readings too close to tell
        return start_up
    return Anchor(second.start_ns - later_reading, second.stream, later_reading, drift, unknown)


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
    GPU's clock; ``anchor.place`` puts a record on that clock) on the runner's stream, and those that did not (start
    and end both within a span, give or take ``slack_ns`` and the anchor's unknown drift; another stream's record is
    out even inside one: it ran beside the calls, costing them nothing). What was dropped or malformed stays with
    the first."""
    ordered = sorted(spans)
    starts = [start for start, _ in ordered]
    inside, outside = [], []
    for kernel in chunk.kernels:
        start, end = anchor.place(kernel.start_ns), anchor.place(kernel.end_ns)
        slack = slack_ns + anchor.unknown_ns(start)
        at = bisect.bisect_right(starts, start + slack) - 1
        held = at >= 0 and end <= ordered[at][1] + slack
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
