"""GPU timing: event timing of honest code, and work hidden on a side stream caught by the host bracket."""

from __future__ import annotations

import pytest
import torch

from benchmarks.inprocess_timer import time_pair

pytestmark = pytest.mark.gpu

KWARGS = dict(budget_ms=50.0, warmup_calls=3, min_calls=20, max_calls=200, l2_flush_mb=256)


def test_same_function_on_both_sides_times_to_a_speedup_of_one():
    device = torch.device("cuda")
    pool = [[torch.randn(2048, 2048, device=device)] for _ in range(2)]
    paired = time_pair(lambda x: x @ x, lambda x: x @ x, pool, device, **KWARGS)
    assert paired.method == "events"
    assert 0.95 < paired.speedup < 1.05, paired.speedup


def test_work_on_a_side_stream_is_timed_by_the_host_bracket():
    """Events on the current stream would read the hidden GEMM as a few microseconds; the device-wide sync
    after the end event cannot miss it, so the candidate is timed at least at the GEMM's cost."""
    device = torch.device("cuda")
    pool = [[torch.randn(4096, 4096, device=device)] for _ in range(2)]
    side = torch.cuda.Stream(device)

    def hidden(x):
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            out = x @ x
        return out  # returned before the side stream finishes: current-stream events see almost nothing

    paired = time_pair(lambda x: x @ x, hidden, pool, device, **KWARGS)
    assert paired.method == "host_bracket"
    assert paired.excess_ms[1] - paired.excess_ms[0] > 0.5 * paired.reference.median_ms
    assert paired.speedup < 1.2, paired.speedup  # the same GEMM: no real speed-up once the hidden work counts
