"""Typed results of one candidate evaluation: the seam between the evaluator and everything around it.

The judge (``kernel_reward.judge.pipeline`` / ``judge.verdict``) fills an ``EvalResult`` for ONE candidate from
what it observed of the candidate's runner process (nothing the runner sends is taken as a verdict); the execution
service (pool, sandbox, Ray backend) only moves these results around as ``to_dict()`` JSON, and may itself produce
results for failures that kill the pair (``timeout``, ``crashed``).

Fail closed: a result starts as ``crashed`` with ``correct=False`` and only becomes ``correct`` when every
sub-check reported success.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from dataclasses import dataclass, field
from typing import Any


class Status(enum.StrEnum):
    """Verdict of one evaluation. Ordered roughly by how far the candidate got."""

    FORMAT_ERROR = "format_error"  # no code block could be extracted from the completion
    COMPILE_ERROR = (
        "compile_error"  # syntax / import / static-check failure / ModelNew missing / cannot build
    )
    RUNTIME_ERROR = "runtime_error"  # raised while running forward
    TIMEOUT = "timeout"  # exceeded its wall-clock budget; the whole process group was killed
    CRASHED = "crashed"  # the evaluating process died (segfault, abort, os._exit, OOM kill...)
    INCORRECT = "incorrect"  # ran, but outputs do not match the reference
    HACKED = "hacked"  # matched (or tried to) by cheating: see hack_reasons
    CORRECT = "correct"  # every correctness and integrity check passed
    # CPU mode only: the Triton interpreter cannot run something the candidate uses (a libdevice function without a
    # CPU version, an extern or inline-asm call, a driver API; named in ``error``): it may well be right on a GPU.
    # Given only when the failure's text and the judge's reading of the source agree (common.interpreter_gaps);
    # scored like a runtime error, since a candidate can reach such a construct on purpose.
    INTERPRETER_UNSUPPORTED = "interpreter_unsupported"


@dataclass
class KernelTiming:
    """One row of a per-kernel table (device kernels only): the runner's profiling pass, or the launch ledger's
    records of the timed calls."""

    name: str
    device_time_ms: float  # total over the profiled (or, from the ledger, the timed) calls
    calls: int
    from_candidate: bool  # launched by one of the candidate's own Triton functions


def coverage_from_table(table: list[KernelTiming]) -> float | None:
    """Pure: the own rows' share of the table's device time (coverage, PR), within [0, 1]; None when nothing ran
    on the device. The runner computes it over its table, the judge over the rows it decided are own."""
    total = sum(row.device_time_ms for row in table)
    if total <= 0:
        return None
    return min(sum(row.device_time_ms for row in table if row.from_candidate) / total, 1.0)


@dataclass
class TimingStats:
    """Raw-sample summary of one side (reference or candidate) of the paired timing."""

    median_ms: float
    mean_ms: float
    p10_ms: float
    p90_ms: float
    num_samples: int


@dataclass
class EvalResult:
    """Everything known about one candidate. JSON-serialisable through ``to_dict`` / ``from_dict``."""

    status: Status = Status.CRASHED
    compiled: bool = False
    correct: bool = False
    hacked: bool = False
    hack_reasons: list[str] = field(default_factory=list)
    speedup: float | None = None
    speedup_ci: tuple[float, float] | None = None  # 95 % interval of median_ref / median_kernel
    kernel_time_ms: float | None = None
    reference_time_ms: float | None = None
    coverage: float | None = None  # PR: candidate-launched Triton device time / all device kernel time
    reward: float = 0.0
    error: str | None = None
    feedback: str = ""

    # Provenance and details (extend freely; keep JSON-able).
    device: str | None = None  # "cpu" (Triton interpreter) or the CUDA device name
    mode: str = "unknown"  # "gpu" | "interpreter"
    timing_available: bool = False
    reward_scheme: str | None = None
    launched_kernels: list[str] = field(default_factory=list)
    state_transfer: dict[str, Any] = field(default_factory=dict)  # which reference params were copied
    correctness: dict[str, Any] = field(default_factory=dict)  # per-trial max errors, tolerances, checks
    shape_generalization: dict[str, Any] = field(default_factory=dict)  # the resized-input run
    kernel_table: list[KernelTiming] = field(default_factory=list)
    reference_timing: TimingStats | None = None
    kernel_timing: TimingStats | None = None
    timing_method: dict[str, Any] = field(
        default_factory=dict
    )  # how the judge's clock timed it (batch_clock)
    flags: list[str] = field(default_factory=list)  # non-fatal notes, e.g. "implausible_speedup_remeasured"
    phase_seconds: dict[str, float] = field(default_factory=dict)  # load / compile / correctness / timing...
    isolation: dict[str, Any] = field(
        default_factory=dict
    )  # filled by the execution service (level "not_run": screened)
    stdout_tail: str = ""
    attempts: int = (
        1  # execution attempts (infrastructure retries are counted here, never as extra results; 0: none ran)
    )
    # False when the service, not the candidate, failed (infrastructure failure after retries, cancellation): the
    # sample says nothing about the candidate and should be rewarded neither way (kernel_reward.trl.unscored).
    scored: bool = True
    # GPU only: SM clock, temperature and power at the start and end of the candidate's timed phase (gpu_state.py)
    gpu_state: dict[str, Any] | None = None
    # GPU only: one call's memory floor (bytes, measured bandwidth) beside both medians (roofline.Roofline.to_dict)
    roofline: dict[str, Any] | None = None
    # GPU only: "call_bytes" (one call's inputs + outputs), "judge_peak_bytes" (the judge's peak allocated bytes
    # per phase, phase_memory.PhasePeaks), "arena_bytes" (the exchange arena, device memory outside torch's
    # allocator and its cap) and "share_bytes" (the judge's memory cap): the footprint beside what the task needs
    # and what it was allowed
    memory: dict[str, Any] = field(default_factory=dict)
    # Reference-only runs (kernel_reward.judge.reference_run): how far the reference got and its outputs' statistics
    reference_run: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["status"] = self.status.value
        return data

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalResult:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"EvalResult.from_dict: unknown keys {sorted(unknown)}")
        values = dict(data)
        values["status"] = Status(values.get("status", Status.CRASHED.value))
        if "scored" not in values:  # a result without the field: derived from its flags and error text
            values["scored"] = not (
                "cancelled" in (values.get("flags") or [])
                or (
                    values["status"] == Status.CRASHED
                    and str(values.get("error") or "").startswith("infrastructure failure")
                )
            )
        if values.get("speedup_ci") is not None:
            values["speedup_ci"] = tuple(values["speedup_ci"])
        values["kernel_table"] = [KernelTiming(**row) for row in values.get("kernel_table") or []]
        for key in ("reference_timing", "kernel_timing"):
            if values.get(key) is not None:
                values[key] = TimingStats(**values[key])
        return cls(**values)

    @classmethod
    def failure(cls, status: Status, error: str, **details: Any) -> EvalResult:
        """A result for a candidate that never got to (or died during) evaluation."""
        return cls(status=status, error=error, **details)
