"""Feedback text for the next turn: the evaluation rendered as indented JSON, most important fields first.

Structure follows background §1 (status / flags, runtimes, speedup, reward, error text, top kernels by device time).
Order matters because the text is cut to ``max_chars``: the verdict and numbers come first, then the error text
(trimmed to what is left, keeping its head and its tail, where Python puts the exception), then the kernel
table. Never mentions hidden seeds or tolerances the candidate could tune to beyond the published defaults.
``redact_error`` strips the harness's traceback frames and the service's paths from an error before it is shown.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kernel_reward.result import EvalResult
from kernel_reward.runtime import Mode

TOP_KERNELS = 5

_FRAME = re.compile(r'^(?P<indent>\s*)File "(?P<path>[^"]+)", line (?P<line>\d+)(?P<rest>.*)$')
_CANDIDATE_MODULE = re.compile(r"_kr_cand\w*\.py$")
_LIBRARY_ROOT = re.compile(r".*/(?:site-packages|dist-packages|lib/python\d+\.\d+)/")
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+(?P<name>[\w.+-]*)")


def _frame_path(path: str) -> str | None:
    """How a traceback frame's file is shown: the candidate's own module as ``candidate.py``, a library's file by
    its path inside the library (``torch/nn/modules/module.py``), anything else (the harness, the reference, the
    service's files) not at all."""
    if _CANDIDATE_MODULE.search(path):
        return "candidate.py"
    if "/kernel_reward/" in path or path.startswith("<"):
        return None
    library = _LIBRARY_ROOT.match(path)
    return path[library.end() :] if library else None


def redact_error(text: str | None) -> str | None:
    """``text`` without the frames of files the candidate did not write or import (the judge's, the runner's
    harness, the reference) and with every other absolute path cut to its file name. The error itself, the
    candidate's frames and library frames stay: what the model needs to fix its code, not a map of the service."""
    if not text:
        return text
    kept: list[str] = []
    dropping_indent: int | None = None
    for line in text.splitlines():
        frame = _FRAME.match(line)
        if frame is not None:
            shown = _frame_path(frame["path"])
            if shown is None:
                dropping_indent = len(frame["indent"])
                continue
            dropping_indent = None
            kept.append(f'{frame["indent"]}File "{shown}", line {frame["line"]}{frame["rest"]}')
            continue
        if dropping_indent is not None and len(line) - len(line.lstrip()) > dropping_indent:
            continue  # the dropped frame's source line and its caret marks
        dropping_indent = None
        kept.append(_ABSOLUTE_PATH.sub(lambda match: _candidate_name(match["name"]), line))
    return "\n".join(kept) + ("\n" if text.endswith("\n") else "")


def _candidate_name(name: str) -> str:
    return "candidate.py" if _CANDIDATE_MODULE.search(name) else name


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
        fields["timing"] = (
            "not measured (CPU / Triton interpreter mode)"
            if result.mode == Mode.INTERPRETER
            else "not measured"
        )
    if result.launched_kernels:
        fields["launched_triton_kernels"] = list(result.launched_kernels)
    if result.shape_generalization.get("ran") and result.shape_generalization.get("passed") is False:
        fields["resized_input_check"] = "failed: " + str(result.shape_generalization.get("reason"))[:300]
    fields["reward"] = _round(result.reward)
    return fields


def render_feedback(result: EvalResult, max_chars: int = 4000) -> str:
    """Indented JSON of the result, at most ``max_chars`` long, with the important parts first.

    Parts are dropped or trimmed from the least important end (kernel table rows, then the middle of the error
    text) until the JSON fits, so the text stays valid JSON; only when the summary alone is too long is it cut.
    """
    data = summary_fields(result)
    kernels = [
        {
            "name": row.name,
            "device_ms": _round(row.device_time_ms),
            "calls": row.calls,
            "yours": row.from_candidate,
        }
        for row in result.kernel_table[:TOP_KERNELS]
    ]
    if kernels:
        data["top_kernels"] = kernels
    error_budget = max_chars
    for _ in range(20):
        if result.error:
            data["error"] = _trim_middle(result.error, max(error_budget, 80))
        text = json.dumps(data, indent=2)
        overflow = len(text) - max_chars
        if overflow <= 0:
            return text
        if result.error and error_budget > 80:
            # JSON escapes (newlines, quotes) make the text longer than the raw error: shrink by the overflow.
            error_budget = min(error_budget, len(result.error)) - overflow - 16
        elif data.get("top_kernels"):
            data["top_kernels"] = data["top_kernels"][:-1] or None
            if data["top_kernels"] is None:
                del data["top_kernels"]
        else:
            break
    text = json.dumps(data, indent=2)
    return text if len(text) <= max_chars else text[: max_chars - 16] + "\n...(truncated)"


def _trim_middle(text: str, budget: int) -> str:
    if len(text) <= budget:
        return text
    keep_head = budget // 3
    keep_tail = budget - keep_head - 12
    return text[:keep_head] + "\n[...cut...]\n" + text[-keep_tail:]
