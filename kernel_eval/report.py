"""Outputs of an evaluation run: summary.json, every sample, report.md with tables, PNG plots, comparisons.

Layout of an output folder::

    summary.json        metrics (DESIGN keys: num_samples, *_rate, fast_p, per_turn, best_of_history, ...)
    samples.jsonl       one line per evaluated turn: prompt, completion, extracted code, full EvalResult
    completions.jsonl   the completions in saved-completions format (re-evaluate without the model)
    report.md           tables of the above
    plots/fast_p_by_turn.png, plots/status_by_turn.png, plots/speedup_distribution.png
    cache.jsonl         the resume cache (see cache.py)
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernel_reward.result import Status

from .completions import SavedTrajectory, write_completions
from .harness import SampleRecord
from .metrics import FAST_P_THRESHOLDS, Outcome, TurnMetrics, p_key, run_metrics, turn_metrics

logger = logging.getLogger(__name__)

RATE_KEYS = ("format_rate", "compile_rate", "correct_rate", "hacked_rate")
STATUS_ORDER = [s.value for s in Status]
# Fixed colours so that plots of different runs read the same (green good, red hacked, greys for no code).
STATUS_COLOURS = {
    "format_error": "#9e9e9e", "compile_error": "#6a3d9a", "runtime_error": "#b15928", "timeout": "#fb9a99",
    "crashed": "#333333", "incorrect": "#ff7f00", "hacked": "#e31a1c", "correct": "#33a02c",
    "interpreter_unsupported": "#cab2d6",
}


def _turn_dict(metrics: TurnMetrics, turn: int | None = None) -> dict[str, Any]:
    data = metrics.to_dict()
    return {"turn": turn, **data} if turn is not None else data


def build_summary(
    records: Sequence[SampleRecord],
    *,
    config: dict[str, Any] | None = None,
    tts_records: Sequence[SampleRecord] | None = None,
) -> dict[str, Any]:
    """The summary.json content of a run (multi-turn records, plus optional test-time-scaling records)."""
    trajectories = [r.outcomes for r in records]
    metrics = run_metrics(trajectories)
    final_turns = [r.turns[-1] for r in records]
    by_level: dict[str, list[Outcome]] = {}
    for record in records:
        by_level.setdefault(record.task.level or "?", []).append(record.turns[-1].outcome)
    summary: dict[str, Any] = {
        "num_tasks": len({r.task.uuid for r in records}),
        "num_samples": len(records),
        "num_turns": metrics.num_turns,
        "timing_available": metrics.timing_available,
        **_turn_dict(metrics.final),
        "status_counts": dict(Counter(t.result.status.value for t in final_turns)),
        "per_turn": [
            {**_turn_dict(m, turn), "best_so_far": best.to_dict()}
            for turn, (m, best) in enumerate(zip(metrics.per_turn, metrics.best_so_far, strict=True), start=1)
        ],
        "best_of_history": metrics.best_of_history.to_dict(),
        "per_level": {
            level: _turn_dict(turn_metrics(outcomes, timing_available=metrics.timing_available))
            for level, outcomes in sorted(by_level.items())
        },
        "per_task": _per_task(records, metrics.timing_available),
        "cached_turns": sum(t.cached for r in records for t in r.turns),
        "evaluated_turns": sum(not t.cached for r in records for t in r.turns),
        "config": config or {},
    }
    if tts_records:
        # Test-time scaling: the multi-turn turns followed by the refinement rounds form one long history.
        tts = run_metrics([r.outcomes for r in tts_records])
        summary["tts"] = {
            "num_rounds": tts.num_turns,
            "final": _turn_dict(tts.final),
            "per_round": [_turn_dict(m, turn) for turn, m in enumerate(tts.per_turn, start=1)],
            "best_of_history": tts.best_of_history.to_dict(),
        }
    return summary


def _per_task(records: Sequence[SampleRecord], timing_available: bool) -> dict[str, dict[str, Any]]:
    """Final-turn and best-of-history correct rate and Fast@1.2 of each task (over its samples)."""
    by_task: dict[str, list[SampleRecord]] = {}
    for record in records:
        by_task.setdefault(record.task.uuid, []).append(record)
    table = {}
    for uuid, task_records in by_task.items():
        metrics = run_metrics([r.outcomes for r in task_records])
        table[uuid] = {
            "level": task_records[0].task.level,
            "num_samples": len(task_records),
            "correct_rate": metrics.final.correct_rate,
            "hacked_rate": metrics.final.hacked_rate,
            "fast_1": metrics.final.fast_p["1"] if timing_available else None,
            "fast_1.2": metrics.final.fast_p["1.2"] if timing_available else None,
            "best_correct_rate": metrics.best_of_history.correct_rate,
            "best_fast_1.2": metrics.best_of_history.fast_p["1.2"] if timing_available else None,
        }
    return table


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}" if math.isfinite(value) else str(value)
    return str(value)


def _metric_rows(entries: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for entry in entries:
        row = [_fmt(entry.get("turn", "")), _fmt(entry["num_samples"])]
        row += [_fmt(entry[k]) for k in RATE_KEYS]
        row += [_fmt(entry["fast_p"].get(p_key(p))) for p in FAST_P_THRESHOLDS]
        row += [_fmt(entry["fast_p_lower"].get(p_key(p))) for p in FAST_P_THRESHOLDS]
        row += [_fmt(entry["mean_speedup"]), _fmt(entry["geomean_speedup"]), _fmt(entry["mean_reward"])]
        rows.append(row)
    return rows


METRIC_HEADER = ["turn", "samples", "format", "compile", "correct", "hacked",
                 *[f"Fast@{p_key(p)}" for p in FAST_P_THRESHOLDS],
                 *[f"Fast@{p_key(p)} (low)" for p in FAST_P_THRESHOLDS], "mean speedup", "geomean speedup", "mean reward"]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(summary: dict[str, Any], plots: Sequence[str] = ()) -> str:
    """report.md: final metrics, per-turn table, best-of-history, per level, status counts, plots."""
    timing_note = (
        "Timing was measured: Fast@p is the share of ALL samples that are correct with speedup >= p; "
        "Fast@p (low) asks it of the lower end of each speedup's 95 % interval (a speedup that is not noise)."
        if summary["timing_available"]
        else "No timing in this run (CPU / Triton interpreter): Fast@p and speedups are n/a; rates are exact."
    )
    config = summary.get("config", {})
    parts = [
        "# Evaluation report",
        "",
        f"{summary['num_tasks']} tasks, {summary['num_samples']} samples, {summary['num_turns']} turn(s); "
        f"{summary['evaluated_turns']} turns evaluated in this run, {summary['cached_turns']} from the resume cache.",
        "",
        timing_note + " Hacked samples count as incorrect.",
        "",
        "## Per turn (a sample that stopped early keeps its last turn)",
        "",
        markdown_table(METRIC_HEADER, _metric_rows(summary["per_turn"])),
        "",
        "## Best turn of each trajectory (best-of-history)",
        "",
    ]
    parts.append(markdown_table(
        ["after turn", "correct", *[f"Fast@{p_key(p)}" for p in FAST_P_THRESHOLDS], "mean speedup"],
        [[str(e["turn"]), _fmt(e["best_so_far"]["correct_rate"]),
          *[_fmt(e["best_so_far"]["fast_p"].get(p_key(p))) for p in FAST_P_THRESHOLDS],
          _fmt(e["best_so_far"]["mean_speedup"])] for e in summary["per_turn"]],
    ))
    parts += ["", "Over the whole history:", ""]
    best = summary["best_of_history"]
    parts.append(markdown_table(
        ["samples", "correct", *[f"Fast@{p_key(p)}" for p in FAST_P_THRESHOLDS], "mean speedup", "best turn histogram"],
        [[_fmt(best["num_samples"]), _fmt(best["correct_rate"]),
          *[_fmt(best["fast_p"].get(p_key(p))) for p in FAST_P_THRESHOLDS], _fmt(best["mean_speedup"]),
          ", ".join(f"turn {k}: {v}" for k, v in best["best_turn_histogram"].items())]],
    ))
    parts += ["", "## Final turn by level", ""]
    parts.append(markdown_table(
        ["level", *METRIC_HEADER[1:]],
        [[level, *row[1:]] for level, row in zip(
            summary["per_level"], _metric_rows(list(summary["per_level"].values())), strict=True)],
    ))
    parts += ["", "## Per task (final turn, and best turn of the history)", ""]
    parts.append(markdown_table(
        ["task", "level", "samples", "correct", "hacked", "Fast@1.2", "best correct", "best Fast@1.2"],
        [[uuid, row["level"], str(row["num_samples"]), _fmt(row["correct_rate"]), _fmt(row["hacked_rate"]),
          _fmt(row["fast_1.2"]), _fmt(row["best_correct_rate"]), _fmt(row["best_fast_1.2"])]
         for uuid, row in summary["per_task"].items()],
    ))
    parts += ["", "## Final-turn verdicts", ""]
    counts = summary["status_counts"]
    parts.append(markdown_table(["status", "samples"], [[s, str(counts[s])] for s in STATUS_ORDER if s in counts]))
    if "tts" in summary:
        parts += ["", f"## Test-time scaling ({summary['tts']['num_rounds']} turns of history in all)", ""]
        parts.append(markdown_table(METRIC_HEADER, _metric_rows(summary["tts"]["per_round"])))
    if plots:
        parts += ["", "## Plots", ""] + [f"![{Path(p).stem}]({p})" for p in plots]
    if config:
        parts += ["", "## Configuration", "", "```json", json.dumps(config, indent=2, default=str), "```"]
    return "\n".join(parts) + "\n"


def render_plots(summary: dict[str, Any], records: Sequence[SampleRecord], plot_dir: Path) -> list[Path]:
    """PNG plots: Fast@p (and correct rate) by turn, verdicts by turn, final speedup distribution."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot_dir.mkdir(parents=True, exist_ok=True)
    turns = [entry["turn"] for entry in summary["per_turn"]]
    paths = []

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(turns, [e["correct_rate"] for e in summary["per_turn"]], "k-o", label="correct")
    ax.plot(turns, [e["best_so_far"]["correct_rate"] for e in summary["per_turn"]], "k--", alpha=0.6,
            label="correct, best turn so far")
    if summary["timing_available"]:
        for p in FAST_P_THRESHOLDS:
            line = ax.plot(turns, [e["fast_p"][p_key(p)] for e in summary["per_turn"]], "-o", label=f"Fast@{p_key(p)}")
            if p == 1.2:  # the paper's headline threshold, also as best-of-history
                ax.plot(turns, [e["best_so_far"]["fast_p"]["1.2"] for e in summary["per_turn"]], "--",
                        color=line[0].get_color(), alpha=0.6, label="Fast@1.2, best turn so far")
        ax.set_title("Fast@p by turn (share of all samples)")
    else:
        ax.set_title("Correct rate by turn (no timing: Fast@p n/a)")
    ax.set_xlabel("turn")
    ax.set_ylabel("share of all samples")
    ax.set_xticks(turns)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    paths.append(plot_dir / "fast_p_by_turn.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    bottom = [0.0] * len(turns)
    for status in STATUS_ORDER:
        shares = []
        for turn in turns:
            verdicts = [r.turns[min(turn, len(r.turns)) - 1].result.status.value for r in records]
            shares.append(verdicts.count(status) / len(verdicts))
        if any(shares):
            ax.bar(turns, shares, bottom=bottom, label=status, color=STATUS_COLOURS.get(status))
            bottom = [b + s for b, s in zip(bottom, shares, strict=True)]
    ax.set_title("Verdicts by turn")
    ax.set_xlabel("turn")
    ax.set_ylabel("share of all samples")
    ax.set_xticks(turns)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    paths.append(plot_dir / "status_by_turn.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)

    speedups = [r.turns[-1].outcome.speedup for r in records]
    speedups = [s for s, r in zip(speedups, records, strict=True) if s is not None and r.turns[-1].outcome.correct]
    fig, ax = plt.subplots(figsize=(6, 4))
    if speedups:
        ax.hist([math.log2(s) for s in speedups], bins=min(30, max(5, len(speedups))), color="tab:blue")
        ax.axvline(0.0, color="k", linestyle="--", linewidth=1)
        ax.set_xlabel("log2 speedup over the baseline (final turn, correct samples)")
        ax.set_ylabel("samples")
        ax.set_title(f"Speedup distribution ({len(speedups)} correct, timed samples)")
    else:
        ax.text(0.5, 0.5, "no correct, timed sample at the final turn\n(CPU runs have no timing)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        ax.set_title("Speedup distribution")
    fig.tight_layout()
    paths.append(plot_dir / "speedup_distribution.png")
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths


def write_samples(path: Path, records: Sequence[SampleRecord]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            for turn in record.turns:
                handle.write(json.dumps({"level": record.task.level, **turn.to_dict()}) + "\n")


def write_run(
    out_dir: str | Path,
    records: Sequence[SampleRecord],
    *,
    config: dict[str, Any] | None = None,
    tts_records: Sequence[SampleRecord] | None = None,
) -> dict[str, Any]:
    """Write every output of a run under ``out_dir``; returns the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = build_summary(records, config=config, tts_records=tts_records)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    write_samples(out / "samples.jsonl", records)
    if tts_records:
        write_samples(out / "tts_samples.jsonl", tts_records)
    write_completions(
        out / "completions.jsonl",
        [SavedTrajectory(r.task.uuid, r.sample, tuple(t.completion for t in r.turns)) for r in records],
    )
    plots = render_plots(summary, records, out / "plots")
    report = render_markdown(summary, [str(p.relative_to(out)) for p in plots])
    (out / "report.md").write_text(report, encoding="utf-8")
    logger.info("wrote %s/summary.json and report.md", out)
    return summary


# --- comparing runs -----------------------------------------------------------------------------------------


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
    return [[d.metric, _fmt(d.mean_a), _fmt(d.mean_b), f"{d.difference:+.3f}", f"[{d.low:+.3f}, {d.high:+.3f}]",
             str(d.num_tasks)] for d in paired_summary_differences(a, b)]


def compare_summaries(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str] = ("A", "B")) -> str:
    """Side-by-side Markdown tables of two runs: final turn, best-of-history, and each turn."""
    keys = ["num_samples", *RATE_KEYS, "mean_speedup", "geomean_speedup", "mean_reward"]

    def rows(x: dict[str, Any], y: dict[str, Any]) -> list[list[str]]:
        out = [[k, _fmt(x.get(k)), _fmt(y.get(k)), _delta(x.get(k), y.get(k))] for k in keys]
        out += [[f"Fast@{p_key(p)}", _fmt(x["fast_p"].get(p_key(p))), _fmt(y["fast_p"].get(p_key(p))),
                 _delta(x["fast_p"].get(p_key(p)), y["fast_p"].get(p_key(p)))] for p in FAST_P_THRESHOLDS]
        # summaries written before the lower-bound metric lack it: shown as n/a
        low_x, low_y = x.get("fast_p_lower") or {}, y.get("fast_p_lower") or {}
        out += [[f"Fast@{p_key(p)} (low)", _fmt(low_x.get(p_key(p))), _fmt(low_y.get(p_key(p))),
                 _delta(low_x.get(p_key(p)), low_y.get(p_key(p)))] for p in FAST_P_THRESHOLDS]
        return out

    header = ["metric", names[0], names[1], f"{names[1]} - {names[0]}"]
    parts = ["## Final turn", "", markdown_table(header, rows(a, b))]
    best_keys = ["correct_rate", "mean_speedup", "geomean_speedup"]
    best_a, best_b = a["best_of_history"], b["best_of_history"]
    best_rows = [[k, _fmt(best_a.get(k)), _fmt(best_b.get(k)), _delta(best_a.get(k), best_b.get(k))] for k in best_keys]
    best_rows += [[f"Fast@{p_key(p)}", _fmt(best_a["fast_p"].get(p_key(p))), _fmt(best_b["fast_p"].get(p_key(p))),
                   _delta(best_a["fast_p"].get(p_key(p)), best_b["fast_p"].get(p_key(p)))] for p in FAST_P_THRESHOLDS]
    parts += ["", "## Best-of-history", "", markdown_table(header, best_rows)]
    paired = _paired_rows(a, b)
    if paired:
        parts += ["", "## Paired by task (final turn; mean of per-task values, 95 % bootstrap interval over tasks)",
                  "", markdown_table(["metric", names[0], names[1], f"{names[1]} - {names[0]}", "95 % interval",
                                      "tasks"], paired)]
    for turn in range(1, max(len(a["per_turn"]), len(b["per_turn"])) + 1):
        ta = a["per_turn"][min(turn, len(a["per_turn"])) - 1]
        tb = b["per_turn"][min(turn, len(b["per_turn"])) - 1]
        parts += ["", f"## Turn {turn}", "", markdown_table(header, rows(ta, tb))]
    return "\n".join(parts) + "\n"
