"""The launch ledger on a GPU: every launch of the probe's Triton kernel is recorded before the flush marker,
nothing is dropped or malformed, and do_bench's time with the ledger on is reported beside the time without."""

from __future__ import annotations

import json

import pytest

from benchmarks import launch_ledger_probe


@pytest.mark.gpu
def test_every_launch_reaches_the_ledger(tmp_path):
    out = tmp_path / "ledger.json"
    assert launch_ledger_probe.main(["--launches", "50", "--json-out", str(out)]) == 0
    summary = json.loads(out.read_text())
    assert summary["triton_records_before_marker_1"] == summary["triton_launches_before_marker_1"] == 51
    assert summary["other_records_before_marker_1"] >= 50  # the torch additions
    assert summary["markers"][:2] == [1, 2] and summary["dropped"] == 0 and summary["malformed"] == 0
    assert summary["do_bench_ratio"] > 0
