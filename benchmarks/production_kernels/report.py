"""Rows of the production-kernel benchmark: one verdict per kernel, interpreter gaps named, a table and JSON.

A kernel's ``verdict`` is kernel_reward's status, except:

* ``build_error``: the pair could not be built from the installed wheel (the inliner refused; message kept);
* ``interpreter_unsupported`` (kernel_reward's own status): under the CPU interpreter the candidate failed on
  something the interpreter cannot run (a libdevice function without a CPU version, an extern or inline-asm call,
  a driver API), named in ``interpreter_gap``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from kernel_reward.common.interpreter_gaps import interpreter_gap


@dataclass
class Row:
    """One kernel's outcome (JSON-able); ``result`` is the full ``EvalResult.to_dict()`` when it was evaluated."""

    kernel: str
    verdict: str
    status: str | None = None
    interpreter_gap: str | None = None
    speedup: float | None = None
    speedup_ci: list[float] | None = None
    coverage: float | None = None
    hack_reasons: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    error: str | None = None
    static_findings: list[str] = field(default_factory=list)
    do_bench: dict[str, Any] | None = None
    do_bench_error: str | None = None
    result: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def row_from_result(kernel: str, result: Any, static_findings: list[str]) -> Row:
    """A row from a kernel_reward ``EvalResult``."""
    status = result.status.value
    gap = interpreter_gap(result.error) if status == "interpreter_unsupported" else None
    return Row(
        kernel=kernel,
        verdict=status,
        status=status,
        interpreter_gap=gap,
        speedup=result.speedup,
        speedup_ci=list(result.speedup_ci) if result.speedup_ci else None,
        coverage=result.coverage,
        hack_reasons=list(result.hack_reasons),
        flags=list(result.flags),
        error=(result.error or None) and result.error[-4000:],
        static_findings=static_findings,
        result=result.to_dict(),
    )


def false_positives(rows: list[Row]) -> list[str]:
    """Kernels an honest, correct production kernel should never get: anything but correct or a named gap."""
    return [row.kernel for row in rows if row.verdict not in ("correct", "interpreter_unsupported")]


def format_table(rows: list[Row]) -> str:
    """Plain-text table: kernel, verdict, kernel_reward speedup [95 % CI], do_bench speedup, coverage, notes."""
    header = ("kernel", "status", "speedup [95% CI]", "do_bench", "coverage", "flags / reasons")
    lines = [header]
    for row in rows:
        speedup = _number(row.speedup)
        if row.speedup_ci:
            speedup += f" [{_number(row.speedup_ci[0])}, {_number(row.speedup_ci[1])}]"
        bench = _number(row.do_bench["speedup"]) if row.do_bench else ("error" if row.do_bench_error else "-")
        notes = [*row.hack_reasons, *row.static_findings, *row.flags]
        if row.interpreter_gap:
            notes.insert(0, row.interpreter_gap)
        elif row.error and row.verdict != "correct":
            notes.insert(0, row.error.strip().splitlines()[-1][:160])
        lines.append(
            (row.kernel, row.verdict, speedup, bench, _number(row.coverage), "; ".join(notes) or "-")
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header) - 1)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line[:-1], widths, strict=True)) + "  " + line[-1]
        for line in lines
    )


def _number(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.2f}"
