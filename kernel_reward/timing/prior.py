"""A task's timing baseline, measured once by a trusted judge and reused by the next candidates of that task.

Before any candidate code exists, a judge lays out the batches, calibrates both sides' fixed costs and times the
reference alone (``measure.time_reference_before``). None of it depends on the candidate, so the candidates of one
RL group (the same task, the same device, within seconds) need not each pay it inside the exclusive timing slot.
A ``TimingPrior`` is that measurement as plain data; the execution service keeps the freshest per ``prior_key``
(``service.timing_priors``) for a bounded time and number of uses, and a judge asks for it before it queues for
the slot and again once it holds it.

A reused prior's figures are the measuring judge's own, never mixed with the new runner's: that runner (which
holds the candidate's code by the time it is timed) cannot touch them. The reference's baseline from the prior can
only lower the reference time the speedup is taken against (``batch_stats.pick_reference``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from kernel_reward.timing.batch_stats import Overhead
from kernel_reward.timing.calibration import CalibrationBlock, overhead_from

MAX_SAMPLES = 4096  # per list: a prior larger than this is malformed


class PriorExchange(Protocol):
    """Where a judge finds and leaves priors (the service's store, through the judge child's channel)."""

    def ask(self, key: str) -> dict[str, Any] | None: ...

    def offer(self, key: str, prior: dict[str, Any]) -> None: ...


@dataclass(frozen=True)
class TimingPrior:
    """What ``time_reference_before`` measured: calls per batch, the calibration blocks (the overhead is computed
    from them), the reference's per-call baseline, its late gates, and the device's copy bandwidth."""

    calls: int
    blocks: tuple[CalibrationBlock, ...]
    output_copy_ms: float
    before: tuple[float, ...]
    reference_late_gates: tuple[int, int]
    bandwidth_gbps: float

    def overhead(self) -> Overhead:
        """Both sides' fixed costs as the measuring judge computed them from its blocks (output copies added)."""
        return overhead_from(list(self.blocks)).with_output_copies(self.output_copy_ms)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (lists, not tuples): what ``from_dict`` reads, with or without a trip through JSON."""
        data = asdict(self)
        data["blocks"] = [asdict(block) for block in self.blocks]
        data["before"] = list(self.before)
        data["reference_late_gates"] = list(self.reference_late_gates)
        return data

    @classmethod
    def from_dict(cls, data: Any) -> TimingPrior:
        """Validated: every number finite and non-negative, every list non-empty and bounded. Raises ValueError."""
        if not isinstance(data, dict):
            raise ValueError("a timing prior must be a mapping")
        try:
            blocks = tuple(
                CalibrationBlock(*(_samples(block[name]) for name in _BLOCK_FIELDS))
                for block in data["blocks"]
            )
            prior = cls(
                calls=int(data["calls"]),
                blocks=blocks,
                output_copy_ms=_number(data["output_copy_ms"]),
                before=tuple(_samples(data["before"])),
                reference_late_gates=(
                    int(data["reference_late_gates"][0]),
                    int(data["reference_late_gates"][1]),
                ),
                bandwidth_gbps=_number(data["bandwidth_gbps"]),
            )
        except (KeyError, TypeError, IndexError) as exc:
            raise ValueError(f"malformed timing prior: {type(exc).__name__}: {exc}") from exc
        if (
            prior.calls < 1
            or not prior.blocks
            or not prior.before
            or any(not b.candidate for b in prior.blocks)
        ):
            raise ValueError("a timing prior needs calls >= 1, calibration blocks and a baseline")
        if prior.bandwidth_gbps <= 0:
            raise ValueError("a timing prior needs the device's measured bandwidth")
        return prior


_BLOCK_FIELDS = ("reference", "candidate", "walls", "kernel_plain", "kernel")


def _number(value: Any) -> float:
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"not a finite non-negative number: {value!r}")
    return number


def _samples(values: Any) -> list[float]:
    if not isinstance(values, list) or len(values) > MAX_SAMPLES:
        raise ValueError("samples must be a list of at most MAX_SAMPLES numbers")
    return [_number(v) for v in values]


def prior_key(reference_code: str, entry_point: str, device_name: str, options: Any) -> str:
    """Pure: what makes two evaluations' baselines interchangeable: the reference program, its entry point, the
    device, and every option that shapes the timed batches."""
    parts = [
        reference_code,
        entry_point,
        device_name,
        repr(options.timing_budget_ms),
        repr(options.l2_flush_mb),
        repr(options.warmup_calls),
        options.baseline,
        repr(options.allow_tf32),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()
