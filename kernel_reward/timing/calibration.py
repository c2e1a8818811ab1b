"""Each side's fixed cost of a timed batch, from empty pairs run while the runner is still trusted (before the
candidate's code is loaded), in blocks taken tens of milliseconds apart (``overhead_from`` says why)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kernel_reward.timing.batch_stats import Overhead

if TYPE_CHECKING:
    from kernel_reward.timing.batch_clock import BatchClock

CALIBRATION_PAIRS = 8  # per block; two blocks, a third when they disagree
CALIBRATION_AGREE_MS, CALIBRATION_AGREE_SHARE = 0.02, 0.05


@dataclass(frozen=True)
class CalibrationBlock:
    """Empty-pair samples taken back to back: each side's whole empty batch (ms) and each pair's wall time; on a
    gated clock also empty reference batches without and with the runner's dry-batch kernel (``kernel_plain``,
    ``kernel``), whose difference is that kernel's own cost."""

    reference: list[float]
    candidate: list[float]
    walls: list[float]
    kernel_plain: list[float] = field(default_factory=list)
    kernel: list[float] = field(default_factory=list)

    @property
    def candidate_median(self) -> float:
        return float(np.median(self.candidate))


def calibrate(clock: BatchClock, client: Any, repeats: int = CALIBRATION_PAIRS) -> CalibrationBlock:
    """One block of empty pairs (the configuration the measurement uses). Run BEFORE the candidate's code is
    loaded, while the runner is trusted."""
    block = CalibrationBlock([], [], [])
    for index in range(repeats):
        start = time.perf_counter()
        pair = clock.time_pair(client, 0, candidate_first=index % 2 == 1, empty=True)
        block.walls.append((time.perf_counter() - start) * 1e3)
        block.reference.append(pair.reference_ms)
        block.candidate.append(pair.candidate_ms)
        if (
            clock.gate is not None
        ):  # the runner's dry batches ran stream_gate.handover_kernel: time it here too
            for with_kernel in (index % 2 == 0, index % 2 == 1):
                ms = clock.time_reference(empty=True, handover_kernel=with_kernel)
                (block.kernel if with_kernel else block.kernel_plain).append(ms)
    return block


def blocks_agree(a: CalibrationBlock, b: CalibrationBlock) -> bool:
    """Pure: do two blocks' hand-over costs agree (candidate medians within 0.02 ms or 5 %)?"""
    low, high = sorted((a.candidate_median, b.candidate_median))
    return high - low <= max(CALIBRATION_AGREE_MS, CALIBRATION_AGREE_SHARE * low)


def overhead_from(blocks: list[CalibrationBlock]) -> Overhead:
    """Pure: each side's fixed cost from the calibration blocks: the two blocks whose hand-over costs are closest,
    pooled. Blocks are taken tens of milliseconds apart because the hand-over can sit in a slower state for a
    whole block (a GPU context switch at the next time slice rather than now): on the H200 one block of 15 pairs
    read 0.74 ms where the measurement's own batches showed the usual 0.60, and an honest 1.39x kernel read 3.56x.
    Two of three blocks agreeing outvote one caught in such a state."""
    if len(blocks) == 1:
        chosen = blocks
    else:
        pairs = [
            (abs(a.candidate_median - b.candidate_median), i, j)
            for i, a in enumerate(blocks)
            for j, b in enumerate(blocks)
            if i < j
        ]
        _, i, j = min(pairs)
        chosen = [blocks[i], blocks[j]]
    reference = [ms for block in chosen for ms in block.reference]
    candidate = [ms for block in chosen for ms in block.candidate]
    walls = [ms for block in chosen for ms in block.walls]
    spread = max(_spread(reference), _spread(candidate))
    kernel_ms = handover_kernel_ms(
        [ms for block in chosen for ms in block.kernel_plain], [ms for block in chosen for ms in block.kernel]
    )
    # Half an empty pair's wall time: an upper bound on an empty reference batch's (it has no hand-over).
    return Overhead(
        float(np.median(reference)),
        float(np.median(candidate)) - kernel_ms,
        spread,
        float(np.median(walls)) / 2,
        handover_kernel_ms=kernel_ms,
    )


def handover_kernel_ms(plain: list[float], with_kernel: list[float]) -> float:
    """Pure: the dry-batch kernel's own cost, the median empty batch with it less the median one without (0 when
    not measured, never negative). It is taken out of the candidate's calibrated fixed cost: the candidate's own
    calls pay their kernels' costs, as the reference's do."""
    if not (plain and with_kernel):
        return 0.0
    return max(float(np.median(with_kernel)) - float(np.median(plain)), 0.0)


def _spread(samples: list[float]) -> float:
    """Pure: the 10th-90th percentile range (a single outlier does not make a whole evaluation noisy)."""
    low, high = np.percentile(samples, [10, 90])
    return float(high - low)
