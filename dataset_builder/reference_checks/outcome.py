"""Turn what a reference run returned (``kernel_reward.judge.reference_run``'s ``EvalResult``) into a ``ReferenceCheck``."""

from __future__ import annotations

import logging

from kernel_reward.judge.reference_run import OutputStats
from kernel_reward.result import EvalResult, Status

from ..checks import DropReason
from .verdicts import ReferenceCheck, classify_outputs

logger = logging.getLogger(__name__)


def verdict(result: EvalResult, timeout_s: float) -> ReferenceCheck:
    """The check's verdict: a timeout or any failure to run to the end is a problem of its own; a finished run is
    judged by its output statistics (``verdicts.classify_outputs``) and whether the reward can compare them."""
    # The reference worker times itself; a child the service killed (timeout, crash) returned nothing, not even that.
    seconds = result.phase_seconds.get("total", 0.0)
    report = result.reference_run or {}
    if result.status == Status.TIMEOUT:
        return _failed(
            DropReason.TIMEOUT,
            f"no result after {timeout_s:g} s; process group killed",
            result.stdout_tail,
            seconds,
        )
    if result.status != Status.CORRECT or not report.get("finished"):
        return _failed(
            DropReason.CRASH,
            result.error or f"the run ended {result.status.value} without a result",
            result.stdout_tail,
            seconds,
        )
    outputs = [OutputStats.from_dict(o) for o in report["outputs"]]
    found = classify_outputs(outputs, inputs_identical=report["inputs_identical"])
    format_error = report.get("output_format_error")
    if format_error and outputs:  # no tensor at all is no_tensor_output already
        found.append(
            (DropReason.UNSUPPORTED_OUTPUT, f"the reward cannot compare this output: {format_error}")
        )
    details = "; ".join(f"{kind.value}: {reason}" for kind, reason in found) or "ok"
    return ReferenceCheck(
        ok=not found, problems=[k for k, _ in found], details=details, seconds=seconds, outputs=outputs
    )


def _failed(kind: DropReason, reason: str, tail: str, seconds: float) -> ReferenceCheck:
    details = f"{kind.value}: {reason}"
    if tail.strip():
        details += f"\n--- output (head and tail) ---\n{tail}"
    logger.debug("reference check failed: %s", details)
    return ReferenceCheck(ok=False, problems=[kind], details=details, seconds=seconds)
