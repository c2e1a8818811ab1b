"""Turn what a finished (or killed) child left in its workspace into a ``ReferenceCheck``."""

from __future__ import annotations

import logging

from ..checks import DropReason
from .child import OutputStats
from .isolation import Workspace, read_json
from .verdicts import ReferenceCheck, classify_outputs

logger = logging.getLogger(__name__)


def verdict(
    ws: Workspace, returncode: int | None, timed_out: bool, timeout_s: float, seconds: float
) -> ReferenceCheck:
    """Turn what a finished (or killed) child left behind into a ReferenceCheck."""
    report = read_json(ws.result)
    tail = ws.tail()
    if timed_out:
        stage = f" during {report['stage']}" if report else ""
        return _failed(
            DropReason.TIMEOUT,
            f"no result after {timeout_s:g} s{stage}; process group killed",
            tail,
            seconds,
        )
    if report is None or (not report.get("finished", False) and report.get("error") is None):
        if returncode is None:
            how = "exit status unknown"
        else:
            how = f"killed by signal {-returncode}" if returncode < 0 else f"exit code {returncode}"
        return _failed(DropReason.CRASH, f"child died without a result ({how})", tail, seconds)
    if report.get("error") is not None:
        err = report["error"]
        reason = f"{err['stage']} raised {err['type']}: {err['message']}\n{err['traceback']}"
        return _failed(DropReason.CRASH, reason, tail, seconds)

    outputs = [OutputStats.from_dict(o) for o in report["outputs"]]
    found = classify_outputs(outputs, inputs_identical=report["inputs_identical"])
    format_error = report.get("output_format_error")
    if format_error and outputs:  # no tensor at all is no_tensor_output already
        found.append((DropReason.UNSUPPORTED_OUTPUT, f"the reward cannot compare this output: {format_error}"))
    details = "; ".join(f"{kind.value}: {reason}" for kind, reason in found) or "ok"
    return ReferenceCheck(
        ok=not found, problems=[k for k, _ in found], details=details, seconds=seconds, outputs=outputs
    )


def _failed(kind: DropReason, reason: str, tail: str, seconds: float) -> ReferenceCheck:
    details = f"{kind.value}: {reason}"
    if tail.strip():
        details += f"\n--- child output (tail) ---\n{tail}"
    logger.debug("reference check failed: %s", details)
    return ReferenceCheck(ok=False, problems=[kind], details=details, seconds=seconds)
