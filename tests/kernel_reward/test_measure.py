"""Pure parts of timing, profiling, tensors and shapes (no Triton, no GPU)."""

import math

import numpy as np
import pytest
import torch

from benchmarks.inprocess_timer import select_samples, timing_args
from kernel_reward.common.tensors import aliases, flatten_outputs, non_plain_tensors
from kernel_reward.judge.compare import compare_outputs, same_values
from kernel_reward.judge.shapes import resized_variants
from kernel_reward.runner.cuda_timer import CallTime
from kernel_reward.runner.profiling import build_table, coverage_from_table
from kernel_reward.screen.sizes import scaled_sizes
from kernel_reward.timing.statistics import bootstrap_speedup_ci, speedup_of, summarize


def tolerance(dtype_name):
    return (1e-2, 1e-2) if "16" in dtype_name else (1e-4, 1e-4)


def test_summary_statistics_use_the_median():
    stats = summarize([1.0, 1.0, 1.0, 100.0])
    assert stats.median_ms == 1.0 and stats.num_samples == 4 and stats.mean_ms == pytest.approx(25.75)


def test_speedup_and_bootstrap_interval():
    rng = np.random.default_rng(0)
    reference = list(2.0 + 0.05 * rng.standard_normal(200))
    candidate = list(1.0 + 0.05 * rng.standard_normal(200))
    speedup = speedup_of(reference, candidate)
    low, high = bootstrap_speedup_ci(reference, candidate)
    assert low < speedup < high
    assert 1.9 < low and high < 2.1
    assert math.isclose(speedup, np.median(reference) / np.median(candidate))


def test_coverage_is_candidate_device_time_over_all_device_time():
    table = build_table([("my_kernel", 3.0), ("my_kernel", 3.0), ("at::native::gemm", 2.0)], {"my_kernel"})
    assert [(row.name, row.device_time_ms, row.calls, row.from_candidate) for row in table] == [
        ("my_kernel", 6.0, 2, True),
        ("at::native::gemm", 2.0, 1, False),
    ]
    assert coverage_from_table(table) == pytest.approx(0.75)
    assert coverage_from_table([]) is None


def test_profiler_records_count_only_as_often_as_the_forward_launched_them():
    """A thread of the candidate's spinning a kernel beside the forward: the profiler sees 40 records of 0.02 ms
    under the name the forward launched twice (0.001 ms each) and, with it, 0.5 ms of torch work. Only the two
    shortest records are the forward's; the padding counts in the total, not as the candidate's."""
    from collections import Counter

    from kernel_reward.runner.profiling import BEYOND_THE_FORWARD, kept_to_forward_launches

    events = (
        [("spin", 0.02)] * 20 + [("spin", 0.001), ("aten::add", 0.5), ("spin", 0.001)] + [("spin", 0.02)] * 20
    )
    kept = kept_to_forward_launches(events, Counter({"spin": 2}))
    assert sorted(kept) == sorted(
        [("aten::add", 0.5), ("spin", 0.001), ("spin", 0.001)] + [(BEYOND_THE_FORWARD, 0.02)] * 40
    )
    table = build_table(kept, {"spin"})
    assert coverage_from_table(table) == pytest.approx(0.002 / (0.002 + 0.5 + 0.8))
    padded = coverage_from_table(build_table(events, {"spin"}))
    assert padded == pytest.approx(0.802 / 1.302)  # what the same records read when every one counted
    # An honest forward: as many records as launches, nothing moves.
    honest = [("k", 0.3), ("aten::mm", 0.1), ("k", 0.3)]
    assert sorted(kept_to_forward_launches(honest, Counter({"k": 2}))) == sorted(honest)


def test_compare_outputs_checks_shape_dtype_and_tolerance():
    ref = [torch.ones(4)]
    assert compare_outputs([torch.ones(4) + 5e-5], ref, tolerance).ok
    assert not compare_outputs([torch.ones(4) + 1e-3], ref, tolerance).ok
    assert "shape" in compare_outputs([torch.ones(2, 2)], ref, tolerance).reason
    assert "dtype" in compare_outputs([torch.ones(4, dtype=torch.float64)], ref, tolerance).reason
    assert compare_outputs(
        [torch.ones(4, dtype=torch.float16) + 5e-3], [torch.ones(4, dtype=torch.float16)], tolerance
    ).ok
    nan_ref = [torch.tensor([float("nan"), 1.0])]
    assert compare_outputs([torch.tensor([float("nan"), 1.0])], nan_ref, tolerance).ok
    assert not compare_outputs([torch.tensor([0.0, 1.0])], nan_ref, tolerance).ok


def test_max_error_ignores_non_finite_values_and_can_be_skipped():
    ref = [torch.tensor([[float("inf"), 1.0], [float("nan"), 2.0]])]
    got = [torch.tensor([[float("inf"), 1.00002], [float("nan"), 2.0]])]
    measured = compare_outputs(got, ref, tolerance)
    assert measured.ok and measured.max_abs_error == pytest.approx(2e-5, rel=0.05)
    skipped = compare_outputs(got, ref, tolerance, measure_error=False)
    assert skipped.ok and skipped.max_abs_error is None
    wrong = compare_outputs(
        [torch.tensor([[float("inf"), 1.5], [float("nan"), 2.0]])], ref, tolerance, measure_error=False
    )
    assert (
        not wrong.ok
        and wrong.max_abs_error is None
        and "1 of 4" in wrong.reason
        and "max abs" not in wrong.reason
    )
    measured_wrong = compare_outputs(
        [torch.tensor([[float("inf"), 1.5], [float("nan"), 2.0]])], ref, tolerance
    )
    assert measured_wrong.max_abs_error == pytest.approx(0.5) and "max abs error 0.5" in measured_wrong.reason
    only_non_finite = compare_outputs(
        [torch.tensor([[float("nan"), 1.0], [float("inf"), 2.0]])], ref, tolerance
    )
    assert not only_non_finite.ok and "NaN or infinite on one side only" in only_non_finite.reason


def test_buffers_are_snapshotted_and_restored_by_name():
    from kernel_reward.common.tensors import buffer_snapshot, restore_buffers

    norm = torch.nn.BatchNorm1d(4)
    snapshot = buffer_snapshot(norm)
    norm(torch.randn(8, 4) * 3 + 1)  # a training-mode forward moves the running statistics
    assert not torch.equal(norm.running_mean, snapshot["running_mean"]) and int(norm.num_batches_tracked) == 1
    assert restore_buffers(norm, snapshot) == 3
    assert torch.equal(norm.running_mean, torch.zeros(4)) and int(norm.num_batches_tracked) == 0
    assert (
        restore_buffers(torch.nn.BatchNorm1d(5), snapshot) == 1
    )  # other shapes left alone: only the counter fits


def test_queued_comparisons_resolve_together_in_order():
    from kernel_reward.judge.compare import queue_comparison, resolve_all

    ref = [torch.zeros(8), torch.arange(4)]
    good = queue_comparison([torch.zeros(8), torch.arange(4)], ref, tolerance, measure_error=False)
    wrong_ints = queue_comparison([torch.zeros(8), torch.arange(4) + 1], ref, tolerance, measure_error=False)
    wrong_shape = queue_comparison([torch.zeros(9), torch.arange(4)], ref, tolerance)
    verdicts = resolve_all([good, wrong_ints, wrong_shape])
    assert [v.ok for v in verdicts] == [True, False, False]
    assert "integer/bool" in verdicts[1].reason and "shape" in verdicts[2].reason
    assert resolve_all([]) == []


def test_timed_comparison_lets_rare_near_misses_through_but_not_a_wrong_answer():
    reference = torch.zeros(1_000_000)
    one_near_miss = reference.clone()
    one_near_miss[17] = 3e-4  # outside atol 1e-4, inside 10x: an honest summation-order difference
    assert not compare_outputs([one_near_miss], [reference], tolerance).ok
    assert compare_outputs([one_near_miss], [reference], tolerance, outlier_share=1e-5).ok
    far_miss = reference.clone()
    far_miss[17] = 1.0  # one value really wrong
    assert not compare_outputs([far_miss], [reference], tolerance, outlier_share=1e-5).ok
    many_near_misses = reference + 3e-4  # a lower-precision answer misses everywhere
    assert not compare_outputs([many_near_misses], [reference], tolerance, outlier_share=1e-5).ok


def test_output_integrity_helpers():
    x = torch.randn(8)
    assert aliases([x.view(2, 4)], [x]) and not aliases([x.clone()], [x])

    class Sub(torch.Tensor):
        pass

    assert non_plain_tensors([x.as_subclass(Sub)]) == ["Sub"] and non_plain_tensors([x]) == []
    assert same_values([x, 3], [x.clone(), 3]) and not same_values([x], [x + 1])
    with pytest.raises(Exception, match="expected a tensor"):
        flatten_outputs({"out": x})


def test_scaled_sizes_scale_sizes_only():
    source = "import torch\nBATCH = 16\nDIM: int = 64\nKERNEL_SIZE = 3\nlower = 10\nEPS = 1\n"
    assert scaled_sizes(source, 1.5, make_odd=True) == {"BATCH": (16, 23), "DIM": (64, 95)}
    assert scaled_sizes(source, 1.5, make_odd=False) == {"BATCH": (16, 24), "DIM": (64, 96)}
    variants = resized_variants(source, 1.5)
    # larger first (odd, plain); then shrunk, for tasks whose larger variant cannot fit the exchange arena (the
    # plain shrink 16 -> 11, 64 -> 43 is already odd: one variant)
    assert [(info["scale"], info["odd"]) for _src, info in variants] == [
        (1.5, True),
        (1.5, False),
        (0.6667, True),
    ]
    assert "BATCH = 11" in variants[2][0] and "DIM: int = 43" in variants[2][0]
    assert all(info["via"] == "kernel_reward.screen.sizes" for _src, info in variants)
    odd_source = variants[0][0]
    assert "BATCH = 23" in odd_source and "DIM: int = 95" in odd_source
    assert "KERNEL_SIZE = 3" in odd_source and "lower = 10" in odd_source and "EPS = 1" in odd_source
    assert "BATCH = 24" in variants[1][0]


def test_resized_variants_of_an_unreadable_program_are_none():
    assert resized_variants("N = = 1\n", 1.5) == []
    assert resized_variants("N = 16\nN = 32\n", 1.5) == []  # which N is the size? not guessed
    assert resized_variants("import torch\nEPS = 5\n", 1.5) == []


def test_timing_args_are_fresh_and_unique_per_call():
    pool = [
        [torch.randn(4, 6).t(), torch.arange(5), torch.tensor(2.0, dtype=torch.float16), 3, torch.empty(0)]
    ]
    snapshot = pool[0][0].clone()
    calls = [timing_args(pool, i) for i in range(30)]
    contents = {tuple(c[0].flatten().tolist()) for c in calls}
    assert len(contents) > 15  # content differs from call to call (the swap position cycles)
    for call in calls:
        assert call[0].data_ptr() != pool[0][0].data_ptr()  # fresh buffer
        assert int((call[0] != snapshot).sum()) == 2  # exactly two values swapped...
        assert torch.equal(
            call[0].flatten().sort().values, pool[0][0].flatten().sort().values
        )  # ...none changed
        assert torch.equal(call[1], pool[0][1]) and call[3] == 3  # integers untouched
        assert float(call[2]) == 2.0 and call[4].numel() == 0
    assert torch.equal(timing_args(pool, 7)[0], timing_args(pool, 7)[0])  # both sides of a call see the same
    assert torch.equal(pool[0][0], snapshot)  # the pool itself is never modified


def test_time_pair_loop_on_the_host_clock():
    """The whole timing loop (warm-up, estimate, interleaving, validation) with a host timer on CPU."""
    from benchmarks.inprocess_timer import HostTimer, time_pair
    from kernel_reward.judge.compare import compare_outputs
    from kernel_reward.timing.statistics import TimingValidationError

    def validate(reference_output, candidate_output):
        comparison = compare_outputs([candidate_output], [reference_output], tolerance)
        return None if comparison.ok else comparison.reason

    pool = [[torch.randn(64, 64)], [torch.randn(64, 64)]]
    reference = lambda x: x @ x  # noqa: E731
    kwargs = dict(
        budget_ms=5.0,
        warmup_calls=2,
        min_calls=10,
        max_calls=40,
        l2_flush_mb=0,
        validate=validate,
        timer=HostTimer(),
    )
    paired = time_pair(reference, lambda x: x @ x, pool, torch.device("cpu"), **kwargs)
    assert 10 <= paired.reference.num_samples == paired.candidate.num_samples <= 40
    assert paired.speedup > 0 and paired.speedup_ci[0] <= paired.speedup <= paired.speedup_ci[1]

    calls = {"n": 0}

    def lazy_when_timed(x):  # right for the first calls, then returns garbage fast
        calls["n"] += 1
        return x @ x if calls["n"] <= 8 else torch.zeros_like(x)

    with pytest.raises(TimingValidationError, match="wrong answer"):
        time_pair(reference, lazy_when_timed, pool, torch.device("cpu"), **kwargs)


def test_select_samples_uses_events_unless_the_candidate_leaves_work_behind():
    rng = np.random.default_rng(1)

    def calls(device_ms, excess_ms, n=50):
        return [
            CallTime(device_ms + 0.001 * rng.standard_normal(), excess_ms + 0.003 * rng.standard_normal())
            for _ in range(n)
        ]

    reference = calls(0.100, 0.004)
    honest = calls(0.050, 0.005)  # same host excess as the reference: events are the measure
    ref_ms, cand_ms, method = select_samples(reference, honest)
    assert method == "events"
    assert ref_ms == [c.device_ms for c in reference] and cand_ms == [c.device_ms for c in honest]

    hidden = calls(0.002, 0.190)  # events see 2 us, the device-wide sync sees a 190 us side-stream GEMM
    ref_ms, cand_ms, method = select_samples(reference, hidden)
    assert method == "host_bracket"
    assert np.median(cand_ms) == pytest.approx(0.192, abs=0.005)  # the hidden work is counted...
    assert np.median(ref_ms) == pytest.approx(0.104, abs=0.005)  # ...and both sides use the same clock

    # Below the noise floor (absolute 20 us, or 10 % of the candidate's own time) nothing is suspected.
    slight = calls(0.500, 0.040)
    assert select_samples(reference, slight)[2] == "events"


def test_event_table_takes_the_event_records_out_of_other_work():
    from kernel_reward.runner.profiling import OTHER_DEVICE_WORK, event_table

    # 10 forwards of one 17 us kernel: the brackets add 1 us per forward and 1.5 us per launch.
    launches = [("add_relu_kernel", 0.017)] * 10
    table = event_table(
        10 * (0.017 + 0.001 + 0.0015),
        launches,
        {"add_relu_kernel"},
        calls=10,
        empty_ms=0.001,
        per_launch_ms=0.0015,
    )
    assert [row.name for row in table] == ["add_relu_kernel"]  # no phantom "other" work
    assert coverage_from_table(table) == 1.0

    # Triton add (30 us) + torch relu (20 us) per forward: other work is the relu, coverage 0.6.
    table = event_table(
        10 * (0.030 + 0.020 + 0.001 + 0.0015),
        [("add_kernel", 0.030)] * 10,
        {"add_kernel"},
        calls=10,
        empty_ms=0.001,
        per_launch_ms=0.0015,
    )
    other = next(row for row in table if row.name == OTHER_DEVICE_WORK)
    assert other.calls == 10 and not other.from_candidate and other.device_time_ms == pytest.approx(0.2)
    assert coverage_from_table(table) == pytest.approx(0.6)

    # Tiny kernels: a 3 us Triton matmul whose bracket reads 1 us more than the kernel, then a 2 us torch add.
    # Forward = 1 (forward bracket) + 3 + 1.5 (launch bracket) + 2 us; coverage must be 3 / 5, not 4 / 5.
    table = event_table(
        10 * (0.001 + 0.003 + 0.0015 + 0.002),
        [("matmul", 0.004)] * 10,
        {"matmul"},
        calls=10,
        empty_ms=0.001,
        per_launch_ms=0.0015,
        launch_bracket_ms=0.001,
    )
    assert {row.name: row.device_time_ms for row in table} == pytest.approx(
        {"matmul": 0.03, OTHER_DEVICE_WORK: 0.02}
    )
    assert coverage_from_table(table) == pytest.approx(0.6)


def test_events_coverage_measures_a_gappy_forward_again():
    """A forward whose host launch outlasted the lead spin is measured again, its launch records dropped; one that
    never fits raises LaunchGapError (the worker then falls back to the profiler) instead of a wrong coverage."""
    from kernel_reward.runner.launches import Launch, LaunchMonitor
    from kernel_reward.runner.profiling import (
        GAP_RETRIES,
        LaunchGapError,
        _gap_free_forward,
        launch_was_covered,
    )

    assert launch_was_covered(0.2, 0.5) and not launch_was_covered(0.5, 0.5)

    class FakeTimer:
        spin_ms = 1.0

        def cover_launches(self, launch_ms):
            self.spin_ms = 2 * launch_ms + 0.05

    monitor = LaunchMonitor("cand")
    launch_times = iter([3.0, 0.4])  # a re-compile stalls the first try; the second fits the longer spin

    def bracketed(forward):
        forward()
        return 0.25, next(launch_times)

    def forward():
        monitor.launches.append(Launch("k", "cand"))
        monitor.timed.append((Launch("k", "cand"), None, None))

    timer = FakeTimer()
    assert _gap_free_forward(forward, bracketed, timer, monitor) == 0.25
    assert len(monitor.launches) == 1 and len(monitor.timed) == 1  # the gappy try's records are gone
    assert timer.spin_ms == pytest.approx(6.05)

    slow = iter([5.0 * 4**i for i in range(1 + GAP_RETRIES)])  # the host falls further behind every time
    with pytest.raises(LaunchGapError, match="outlasted its lead spin"):
        _gap_free_forward(forward, lambda f: (f(), (0.25, next(slow)))[1], FakeTimer(), monitor)
    assert len(monitor.launches) == 1  # nothing of the failed forward is left behind
