"""A task's timing baseline, measured once by a trusted judge and reused by the next candidates of that task.

Before any candidate code exists, a judge lays out the batches, calibrates both sides' fixed costs and times the
reference alone (``measure.time_reference_before``). None of it depends on the candidate, so the candidates of one
RL group (the same task, the same device, within seconds) need not each pay it inside the exclusive timing slot.
A ``TimingPrior`` is that measurement as plain data; the execution service keeps the freshest per ``prior_key``
(``service.timing_priors``) and a judge asks for it once it holds the slot.

A reused prior never stands alone: the judge still calibrates one fresh block against its own runner, and uses the
prior only when that block is quiet and agrees with one of the prior's (``confirms``); otherwise it measures
everything itself. The reference's baseline from the prior can only lower the reference time the speedup is
taken against (``batch_stats.pick_reference`` keeps the lower of it and the interleaved samples).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from kernel_reward.timing.batch_stats import Overhead
from kernel_reward.timing.calibration import (
    CALIBRATION_AGREE_MS,
    CALIBRATION_AGREE_SHARE,
    CalibrationBlock,
    blocks_agree,
    overhead_from,
)
from kernel_reward.timing.calibration import samples_spread as calibration_spread

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

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["blocks"] = [asdict(block) for block in self.blocks]
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


def confirms(prior: TimingPrior, fresh: CalibrationBlock) -> bool:
    """Pure: does a fresh block confirm the prior's hand-over cost? Its median agrees with one of the prior's blocks
    (``blocks_agree``) and its samples are as quiet as the prior's: their 10th-90th percentile range at most twice
    the widest of the prior's blocks, plus the agreement tolerance (a block whose samples split between two states
    can have an agreeing median; the two pair orders of a block always differ a little)."""
    widest = max(calibration_spread(block.candidate) for block in prior.blocks)
    tolerance = max(CALIBRATION_AGREE_MS, CALIBRATION_AGREE_SHARE * fresh.candidate_median)
    quiet = calibration_spread(fresh.candidate) <= 2 * widest + tolerance
    return quiet and any(blocks_agree(block, fresh) for block in prior.blocks)


def overhead_with(prior: TimingPrior, fresh: CalibrationBlock) -> Overhead | None:
    """Pure: the prior's own overhead (from its blocks, as its first judge computed it, the output copies' cost
    added) when the fresh block confirms it, else None. The fresh block decides only whether the prior is used:
    its samples never enter the figures."""
    if not confirms(prior, fresh):
        return None
    return overhead_from(list(prior.blocks)).with_output_copies(prior.output_copy_ms)
