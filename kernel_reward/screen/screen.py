"""The screen: what the service decides about a candidate before any of its code runs.

``screen_candidate`` extracts the code from a completion and runs the static checks on its AST. Its answer is
either the code to judge or the failure that ends the evaluation here (format error, compile error, static hack).
The static checks are a cheap filter and a source of feedback, never the security boundary: a candidate that
passes them still runs only in the sandboxed runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernel_reward.result import Status
from kernel_reward.screen.extract import extract_code
from kernel_reward.screen.static_checks import check_candidate


@dataclass(frozen=True)
class Screening:
    """The screen's answer: ``code`` to judge, or the ``status`` / ``error`` / ``hack_reasons`` of a rejection."""

    code: str | None = None
    status: Status | None = None
    error: str | None = None
    hack_reasons: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.code is not None


def screen_candidate(candidate: str, entry_point: str) -> Screening:
    """Extract and statically check ``candidate`` (a raw completion or plain code) for a program with ``entry_point``."""
    code = extract_code(candidate)
    if code is None:
        return Screening(
            status=Status.FORMAT_ERROR,
            error="no fenced code block (```python ... ```) found in the completion",
        )
    static = check_candidate(code, entry_point)
    if static.compile_findings:
        return Screening(
            status=Status.COMPILE_ERROR, error="; ".join(f.describe() for f in static.compile_findings)
        )
    if static.hack_findings:
        return Screening(
            status=Status.HACKED,
            error="static checks: " + "; ".join(f.describe() for f in static.hack_findings),
            hack_reasons=[f.reason.value for f in static.hack_findings],
        )
    return Screening(code=code)
