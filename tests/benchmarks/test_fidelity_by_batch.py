"""bench_reward.py --target-batch-ms: fidelity_judge once per batch target, the judge's target restored after
(the fidelity itself needs a GPU: stood in for here by a stub that reports the K each target gives)."""

from __future__ import annotations

import pytest

from benchmarks import bench_reward
from kernel_reward.timing import measure


def test_each_target_is_run_and_the_default_comes_back(monkeypatch):
    default = measure.TARGET_BATCH_MS
    seen = []

    def stub(names, device, budget_ms):
        seen.append(measure.TARGET_BATCH_MS)
        k = max(1, int(measure.TARGET_BATCH_MS))
        return {
            "rows": [{"task": "t", "calls_per_batch": k, "speedup": 0.97, "ci_low": 0.96, "ci_high": 0.98}]
        }

    monkeypatch.setattr(bench_reward, "fidelity_judge", stub)
    rows = bench_reward.fidelity_by_batch(["t"], "cuda", 50.0, [1.0, 12.0])
    assert seen == [1.0, 12.0] and measure.TARGET_BATCH_MS == default
    assert [(r["target_ms"], r["calls_per_batch"], r["ci"]) for r in rows] == [
        (1.0, 1, [0.96, 0.98]),
        (12.0, 12, [0.96, 0.98]),
    ]

    def broken(names, device, budget_ms):
        raise RuntimeError("no runner")

    monkeypatch.setattr(bench_reward, "fidelity_judge", broken)
    with pytest.raises(RuntimeError):
        bench_reward.fidelity_by_batch(["t"], "cuda", 50.0, [2.0])
    assert measure.TARGET_BATCH_MS == default
