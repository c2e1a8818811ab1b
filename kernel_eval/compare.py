"""Two runs side by side (``drkernel-evaluate --compare RUN_A RUN_B``): their summaries' metrics in Markdown
tables, final turn, best-of-history and each turn, plus a paired-by-task table when both ran the same tasks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .metrics import FAST_P_THRESHOLDS, p_key
from .report import RATE_KEYS, format_value, markdown_table


def load_summary(path: str | Path) -> dict[str, Any]:
    """A summary.json, given the file or the run folder that holds it."""
    path = Path(path)
    if path.is_dir():
        path = path / "summary.json"
    if not path.is_file():
        raise FileNotFoundError(f"no summary.json at {path}")
    return json.loads(path.read_text(encoding="utf-8"))


def _delta(a: Any, b: Any) -> str:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return f"{b - a:+.3f}"
    return ""


def _paired_rows(a: dict[str, Any], b: dict[str, Any]) -> list[list[str]]:
    """Paired-by-task rows when both runs cover the same tasks (else none: the comparison would not be paired)."""
    from .paired import paired_summary_differences

    if set(a.get("per_task") or {}) != set(b.get("per_task") or {}):
        return []
    return [
        [
            d.metric,
            format_value(d.mean_a),
            format_value(d.mean_b),
            f"{d.difference:+.3f}",
            f"[{d.low:+.3f}, {d.high:+.3f}]",
            str(d.num_tasks),
        ]
        for d in paired_summary_differences(a, b)
    ]


def compare_summaries(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str] = ("A", "B")) -> str:
    """Side-by-side Markdown tables of two runs: final turn, best-of-history, and each turn."""
    keys = ["num_samples", *RATE_KEYS, "mean_speedup", "geomean_speedup", "mean_reward"]

    def rows(x: dict[str, Any], y: dict[str, Any]) -> list[list[str]]:
        out = [[k, format_value(x.get(k)), format_value(y.get(k)), _delta(x.get(k), y.get(k))] for k in keys]
        out += [
            [
                f"Fast@{p_key(p)}",
                format_value(x["fast_p"].get(p_key(p))),
                format_value(y["fast_p"].get(p_key(p))),
                _delta(x["fast_p"].get(p_key(p)), y["fast_p"].get(p_key(p))),
            ]
            for p in FAST_P_THRESHOLDS
        ]
        # a summary without the lower-bound metric (``fast_p_lower``) shows n/a there
        low_x, low_y = x.get("fast_p_lower") or {}, y.get("fast_p_lower") or {}
        out += [
            [
                f"Fast@{p_key(p)} (low)",
                format_value(low_x.get(p_key(p))),
                format_value(low_y.get(p_key(p))),
                _delta(low_x.get(p_key(p)), low_y.get(p_key(p))),
            ]
            for p in FAST_P_THRESHOLDS
        ]
        return out

    header = ["metric", names[0], names[1], f"{names[1]} - {names[0]}"]
    parts = ["## Final turn", "", markdown_table(header, rows(a, b))]
    best_keys = ["correct_rate", "mean_speedup", "geomean_speedup"]
    best_a, best_b = a["best_of_history"], b["best_of_history"]
    best_rows = [
        [k, format_value(best_a.get(k)), format_value(best_b.get(k)), _delta(best_a.get(k), best_b.get(k))]
        for k in best_keys
    ]
    best_rows += [
        [
            f"Fast@{p_key(p)}",
            format_value(best_a["fast_p"].get(p_key(p))),
            format_value(best_b["fast_p"].get(p_key(p))),
            _delta(best_a["fast_p"].get(p_key(p)), best_b["fast_p"].get(p_key(p))),
        ]
        for p in FAST_P_THRESHOLDS
    ]
    parts += ["", "## Best-of-history", "", markdown_table(header, best_rows)]
    paired = _paired_rows(a, b)
    if paired:
        parts += [
            "",
            "## Paired by task (final turn; mean of per-task values, 95 % bootstrap interval over tasks)",
            "",
            markdown_table(
                ["metric", names[0], names[1], f"{names[1]} - {names[0]}", "95 % interval", "tasks"], paired
            ),
        ]
    for turn in range(1, max(len(a["per_turn"]), len(b["per_turn"])) + 1):
        ta = a["per_turn"][min(turn, len(a["per_turn"])) - 1]
        tb = b["per_turn"][min(turn, len(b["per_turn"])) - 1]
        parts += ["", f"## Turn {turn}", "", markdown_table(header, rows(ta, tb))]
    return "\n".join(parts) + "\n"
