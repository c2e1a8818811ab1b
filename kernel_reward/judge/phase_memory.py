"""Peak device memory of the judge, per evaluation phase: where an evaluation's memory goes.

A task that does not fit the GPU fails as ``out of GPU memory`` whatever the candidate did; to size workers by each
task's footprint, and to keep that footprint near what the task itself needs (its inputs and outputs), the judge
first has to know which phase holds how much. ``PhasePeaks.phase(name)`` wraps a phase: the peak of
``torch.cuda.max_memory_allocated`` while it ran (the caching allocator's live tensors, not its reserve), the largest
over the phase's repetitions. Phases may nest: an inner phase's peak counts for the phases around it.

Only the judge's own process is measured here; the runner's memory lives in another (sandboxed) process, and the
arena it computes in is the judge's allocation, so it is counted on this side.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import torch


class PhasePeaks:
    """Peak allocated bytes per phase name; ``read``/``reset`` default to the CUDA allocator's statistics."""

    def __init__(
        self,
        device: torch.device | None = None,
        *,
        read: Callable[[], int] | None = None,
        reset: Callable[[], None] | None = None,
    ) -> None:
        cuda = device is not None and device.type == "cuda"
        self._read = read or (lambda: torch.cuda.max_memory_allocated(device) if cuda else 0)
        self._reset = reset or (lambda: torch.cuda.reset_peak_memory_stats(device) if cuda else None)
        self.enabled = cuda or read is not None
        self.peaks: dict[str, int] = {}
        self._open: list[str] = []

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        self._take()  # what ran before this phase belongs to the phases already open
        self._open.append(name)
        try:
            yield
        finally:
            self._take()
            self._open.pop()

    def _take(self) -> None:
        """Credit the peak since the last reset to every open phase, then start a new window."""
        peak = int(self._read())
        for name in self._open:
            self.peaks[name] = max(self.peaks.get(name, 0), peak)
        self._reset()
