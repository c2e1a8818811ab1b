"""Named host-clock spans: where the seconds of an evaluation, and of its timing slot, go.

``Spans`` is any callable ``name -> context manager``; ``SpanClock`` adds each span's wall seconds under its name
(repeated spans add up, nested ones are counted in both). The timing code takes one and names its steps
``slot.<step>`` (``SLOT_STEPS``); the throughput and slot-profile benchmarks read them from
``EvalResult.phase_seconds``. ``unrecorded`` is the no-op default.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

Spans = Callable[[str], AbstractContextManager[Any]]

# The timing slot's steps, in the order an evaluation meets them (benchmarks print them in this order).
SLOT_STEPS = (
    "slot.bandwidth",  # the device's copy bandwidth for the roofline (once per judge process)
    "slot.gpu_state",  # NVML clocks / temperature around the timing
    "slot.layout",  # arena slots, private staging, snapshot and L2-flush buffers
    "slot.reference_warmup",  # the reference's untimed calls and one-call estimate (sizes the batch)
    "slot.calibration",  # empty pairs: both sides' fixed cost per batch
    "slot.reference_baseline",  # the reference's own batches before the candidate is loaded
    "slot.warmup_pairs",  # two verified pairs that do not count
    "slot.timed_pairs",  # the measured pairs
    "slot.retime",  # a second measurement (implausible speedup, above the roofline)
    "slot.coverage",  # coverage measured inside the slot (opt-in)
)
# Inside every batch pair (warm-up, timed and re-timed alike).
PAIR_STEPS = (
    "pair.stage",  # fresh inputs drawn into private staging
    "pair.run",  # both batches queued, the runner asked, E1 waited for
    "pair.queue_checks",  # the comparisons, seal and input checks queued on the GPU
    "pair.resolve",  # the one synchronisation that reads every check's verdict
)


def unrecorded(_name: str) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


class SpanClock:
    """Seconds per span name, added into ``seconds`` (a dict shared with the caller, or a new one)."""

    def __init__(self, seconds: dict[str, float] | None = None) -> None:
        self.seconds = {} if seconds is None else seconds

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
