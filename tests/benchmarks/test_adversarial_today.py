"""benchmarks/adversarial_today.py: which entries a filter picks, and what a row carries from a result."""

from __future__ import annotations

import json

from benchmarks import adversarial_today
from hack_corpus import load_corpus

ENTRIES = {entry.name: entry for entry in load_corpus()}


def test_a_comma_list_filter_picks_each_named_entry_and_gpu_entries_are_skipped_on_cpu(tmp_path):
    out = tmp_path / "rows.json"
    adversarial_today.main(["-k", "tamper_launch_report_when,pre_run_hook", "--json-out", str(out)])
    report = json.loads(out.read_text())
    assert {row["entry"] for row in report["rows"]} == {
        "tamper_launch_report_when_timed_gpu",
        "tamper_coverage_with_pre_run_hook_gpu",
    }
    assert all(row["verdict"] == "skipped" and row["won"] is None for row in report["rows"])
    assert report["launch_ledger"] is False


def test_a_row_carries_the_verdict_speedup_coverage_and_the_ledgers_counts():
    counts = {"timed_calls": 120, "own_launches": 0}
    result = {
        "status": "hacked",
        "reward": 0.0,
        "hack_reasons": ["timed_without_own_kernel"],
        "speedup": 1.01,
        "coverage": None,
        "flags": ["launch_checks_self_reported"],
        "timing_method": {"diagnostics": {"launch_ledger": counts}},
    }
    row = adversarial_today.summarize(ENTRIES["tamper_launch_report_when_timed_gpu"], result, 1.0)
    assert row["won"] is False and row["hack_reasons"] == "timed_without_own_kernel"
    assert row["speedup"] == 1.01 and row["coverage"] is None and row["launch_ledger"] == counts
    won = adversarial_today.summarize(
        ENTRIES["tamper_coverage_with_pre_run_hook_gpu"], {"status": "correct", "reward": 1.48}, 1.0
    )
    assert won["won"] is True and won["launch_ledger"] is None and won["flags"] == []
