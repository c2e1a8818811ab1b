"""Feedback text for the next turn: the evaluation rendered as indented JSON, most important fields first.

Structure follows FACTS 1 (status / flags, runtimes, speedup, reward, error text, top kernels by device time).
Order matters because the text is cut to ``max_chars``: the verdict and numbers come first, then the error text
(trimmed to what is left, keeping its head and its tail, where Python puts the exception), then the kernel
table. Never mentions hidden seeds or tolerances the candidate could tune to beyond the published defaults.
"""

from __future__ import annotations

import json
from typing import Any

from kernel_reward.result import EvalResult

TOP_KERNELS = 5


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits)


def summary_fields(result: EvalResult) -> dict[str, Any]:
    """The short, always-shown part of the feedback."""
    fields: dict[str, Any] = {
        "status": result.status.value,
        "compiled": result.compiled,
        "correctness": result.correct,
        "hacked": result.hacked,
    }
    if result.hack_reasons:
        fields["hack_reasons"] = list(result.hack_reasons)
    if result.timing_available:
        fields["reference_runtime_ms"] = _round(result.reference_time_ms)
        fields["kernel_runtime_ms"] = _round(result.kernel_time_ms)
        fields["speedup"] = _round(result.speedup, 3)
        fields["triton_coverage"] = _round(result.coverage, 3)
    else:
        fields["timing"] = "not measured (CPU / Triton interpreter mode)" if result.mode == "interpreter" else "not measured"
    if result.launched_kernels:
        fields["launched_triton_kernels"] = list(result.launched_kernels)
    if result.shape_generalization.get("ran") and result.shape_generalization.get("passed") is False:
        fields["resized_input_check"] = "failed: " + str(result.shape_generalization.get("reason"))[:300]
    fields["reward"] = _round(result.reward)
    return fields


def render_feedback(result: EvalResult, max_chars: int = 4000) -> str:
    """Indented JSON of the result, cut to ``max_chars`` with the important parts first."""
    data = summary_fields(result)
    head = json.dumps(data, indent=2)
    kernels = [
        {"name": row.name, "device_ms": _round(row.device_time_ms), "calls": row.calls, "yours": row.from_candidate}
        for row in result.kernel_table[:TOP_KERNELS]
    ]
    if kernels:
        data["top_kernels"] = kernels
    if result.error:
        budget = max(max_chars - len(json.dumps(data, indent=2)) - 40, 120)
        data["error"] = _trim_middle(result.error, budget)
    text = json.dumps(data, indent=2)
    if len(text) > max_chars:
        text = text[: max_chars - 20] + "\n... (truncated)"
    if len(text) < len(head):  # never lose the verdict itself
        text = head[:max_chars]
    return text


def _trim_middle(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    keep_head = budget // 3
    keep_tail = budget - keep_head - 12
    return text[:keep_head] + "\n[...cut...]\n" + text[-keep_tail:]
