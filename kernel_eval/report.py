"""Outputs of an evaluation run: summary.json, every sample, report.md with tables, PNG plots, comparisons.

Layout of an output folder::

    summary.json        metrics (keys: num_samples, *_rate, fast_p, per_turn, best_of_history, ...)
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
from .metrics import FAST_P_THRESHOLDS, Outcome, TurnMetrics, p_key, run_metrics, turn_metrics
from .records import SampleRecord

logger = logging.getLogger(__name__)

RATE_KEYS = ("format_rate", "compile_rate", "correct_rate", "hacked_rate")
STATUS_ORDER = [s.value for s in Status]
# Fixed colours so that plots of different runs read the same (green good, red hacked, greys for no code).
STATUS_COLOURS = {
    "format_error": "#9e9e9e",
    "compile_error": "#6a3d9a",
    "runtime_error": "#b15928",
    "timeout": "#fb9a99",
    "crashed": "#333333",
    "incorrect": "#ff7f00",
    "hacked": "#e31a1c",
    "correct": "#33a02c",
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


def format_value(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}" if math.isfinite(value) else str(value)
    return str(value)


def _metric_rows(entries: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for entry in entries:
        row = [format_value(entry.get("turn", "")), format_value(entry["num_samples"])]
        row += [format_value(entry[k]) for k in RATE_KEYS]
        row += [format_value(entry["fast_p"].get(p_key(p))) for p in FAST_P_THRESHOLDS]
        row += [format_value(entry["fast_p_lower"].get(p_key(p))) for p in FAST_P_THRESHOLDS]
        row += [
            format_value(entry["mean_speedup"]),
            format_value(entry["geomean_speedup"]),
            format_value(entry["mean_reward"]),
        ]
        rows.append(row)
    return rows


METRIC_HEADER = [
    "turn",
    "samples",
    "format",
    "compile",
    "correct",
    "hacked",
    *[f"Fast@{p_key(p)}" for p in FAST_P_THRESHOLDS],
    *[f"Fast@{p_key(p)} (low)" for p in FAST_P_THRESHOLDS],
    "mean speedup",
    "geomean speedup",
    "mean reward",
]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def render_markdown(summary: dict[str, Any], plots: Sequence[str] = ()) -> str:
    """report.md: final metrics, per-turn table, best-of-history, per level, status counts, plots."""
    config = summary.get("config", {})
    over = "torch.compile(reference)" if config.get("baseline") == "compile" else "eager PyTorch"
    timing_note = (
        "Timing was measured: Fast@p is the share of ALL samples that are correct with speedup >= p; "
        "Fast@p (low) asks it of the lower end of each speedup's 95 % interval (a speedup that is not noise). "
        f"Speedups are over {over} (`--baseline eager|compile`)."
        if summary["timing_available"]
        else "No timing in this run (CPU / Triton interpreter): Fast@p and speedups are n/a; rates are exact."
    )
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
    parts.append(
        markdown_table(
            ["after turn", "correct", *[f"Fast@{p_key(p)}" for p in FAST_P_THRESHOLDS], "mean speedup"],
            [
                [
                    str(e["turn"]),
                    format_value(e["best_so_far"]["correct_rate"]),
                    *[format_value(e["best_so_far"]["fast_p"].get(p_key(p))) for p in FAST_P_THRESHOLDS],
                    format_value(e["best_so_far"]["mean_speedup"]),
                ]
                for e in summary["per_turn"]
            ],
        )
    )
    parts += ["", "Over the whole history:", ""]
    best = summary["best_of_history"]
    parts.append(
        markdown_table(
            [
                "samples",
                "correct",
                *[f"Fast@{p_key(p)}" for p in FAST_P_THRESHOLDS],
                "mean speedup",
                "best turn histogram",
            ],
            [
                [
                    format_value(best["num_samples"]),
                    format_value(best["correct_rate"]),
                    *[format_value(best["fast_p"].get(p_key(p))) for p in FAST_P_THRESHOLDS],
                    format_value(best["mean_speedup"]),
                    ", ".join(f"turn {k}: {v}" for k, v in best["best_turn_histogram"].items()),
                ]
            ],
        )
    )
    parts += ["", "## Final turn by level", ""]
    parts.append(
        markdown_table(
            ["level", *METRIC_HEADER[1:]],
            [
                [level, *row[1:]]
                for level, row in zip(
                    summary["per_level"], _metric_rows(list(summary["per_level"].values())), strict=True
                )
            ],
        )
    )
    parts += ["", "## Per task (final turn, and best turn of the history)", ""]
    parts.append(
        markdown_table(
            ["task", "level", "samples", "correct", "hacked", "Fast@1.2", "best correct", "best Fast@1.2"],
            [
                [
                    uuid,
                    row["level"],
                    str(row["num_samples"]),
                    format_value(row["correct_rate"]),
                    format_value(row["hacked_rate"]),
                    format_value(row["fast_1.2"]),
                    format_value(row["best_correct_rate"]),
                    format_value(row["best_fast_1.2"]),
                ]
                for uuid, row in summary["per_task"].items()
            ],
        )
    )
    parts += ["", "## Final-turn verdicts", ""]
    counts = summary["status_counts"]
    parts.append(
        markdown_table(["status", "samples"], [[s, str(counts[s])] for s in STATUS_ORDER if s in counts])
    )
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
    ax.plot(
        turns,
        [e["best_so_far"]["correct_rate"] for e in summary["per_turn"]],
        "k--",
        alpha=0.6,
        label="correct, best turn so far",
    )
    if summary["timing_available"]:
        for p in FAST_P_THRESHOLDS:
            line = ax.plot(
                turns, [e["fast_p"][p_key(p)] for e in summary["per_turn"]], "-o", label=f"Fast@{p_key(p)}"
            )
            if p == 1.2:  # the paper's headline threshold, also as best-of-history
                ax.plot(
                    turns,
                    [e["best_so_far"]["fast_p"]["1.2"] for e in summary["per_turn"]],
                    "--",
                    color=line[0].get_color(),
                    alpha=0.6,
                    label="Fast@1.2, best turn so far",
                )
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
    speedups = [
        s for s, r in zip(speedups, records, strict=True) if s is not None and r.turns[-1].outcome.correct
    ]
    fig, ax = plt.subplots(figsize=(6, 4))
    if speedups:
        ax.hist([math.log2(s) for s in speedups], bins=min(30, max(5, len(speedups))), color="tab:blue")
        ax.axvline(0.0, color="k", linestyle="--", linewidth=1)
        ax.set_xlabel("log2 speedup over the baseline (final turn, correct samples)")
        ax.set_ylabel("samples")
        ax.set_title(f"Speedup distribution ({len(speedups)} correct, timed samples)")
    else:
        ax.text(
            0.5,
            0.5,
            "no correct, timed sample at the final turn\n(CPU runs have no timing)",
            ha="center",
            va="center",
            transform=ax.transAxes,
        )
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
