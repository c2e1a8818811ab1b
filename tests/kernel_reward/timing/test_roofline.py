"""kernel_reward.timing.roofline: a per-call time faster than memory allows is re-timed, flagged, and its speedup clamped."""

import math

import pytest

from kernel_reward.result import EvalResult
from kernel_reward.timing import roofline
from kernel_reward.timing.batch_stats import BatchTiming, Overhead
from kernel_reward.timing.spans import unrecorded

GB = 10**9


def test_a_call_moves_its_inputs_and_the_outputs_the_l2_cannot_hold_across_a_batch():
    # 1 GB in, 1 GB out, a 60 MB L2 shared by 4 calls: 15 MB of each call's output may stay in the cache.
    assert roofline.bytes_per_call(GB, GB, 60 * 10**6, 4) == GB + GB - 15 * 10**6
    # Outputs smaller than the cache's share count nothing: they need not reach DRAM inside the timed window.
    assert roofline.bytes_per_call(4096, 1024, 60 * 10**6, 64) == 4096
    with pytest.raises(ValueError, match="calls >= 1"):
        roofline.bytes_per_call(1, 1, 1, 0)
    with pytest.raises(ValueError, match="sizes >= 0"):
        roofline.bytes_per_call(-1, 1, 1, 1)


def test_the_floor_flags_only_a_candidate_under_the_margin_on_a_task_it_applies_to():
    # 4 GB per call at 4,000 GB/s: a 1 ms floor.
    honest = roofline.check(4 * GB, 4000.0, reference_ms=3.0, candidate_ms=0.9)
    assert honest.floor_ms == pytest.approx(1.0)
    assert honest.applies and not honest.below  # 0.9 ms: faster than a copy, within the margin
    assert honest.max_speedup == pytest.approx(3.0 / 0.75)

    impossible = roofline.check(4 * GB, 4000.0, reference_ms=3.0, candidate_ms=0.01)
    assert impossible.below

    # A reference under the floor reads less than its inputs hold (a slice): the bound says nothing then.
    partial_reader = roofline.check(4 * GB, 4000.0, reference_ms=0.05, candidate_ms=0.01)
    assert not partial_reader.applies and not partial_reader.below

    assert roofline.check(0, 4000.0, 1.0, 0.0).max_speedup == math.inf
    with pytest.raises(ValueError, match="bandwidth"):
        roofline.check(GB, 0.0, 1.0, 1.0)
    assert roofline.check(GB, 1000.0, 2.0, 1.5).to_dict()["applies"] is True


def _timing(
    reference_ms: float, candidate_ms: float, *, fixed_ms: float = 0.0, calls: int = 4
) -> BatchTiming:
    """Ten interleaved pairs at these per-call medians; the batches hold the subtracted fixed cost."""
    reference = [reference_ms * (1 + 0.01 * i) for i in range(10)]
    candidate = [candidate_ms * (1 + 0.01 * i) for i in range(10)]
    batches = ([ms * calls + fixed_ms for ms in reference], [ms * calls + fixed_ms for ms in candidate])
    return BatchTiming(
        reference,
        candidate,
        calls,
        Overhead(fixed_ms, fixed_ms, 0.001),
        "interleaved",
        reference_ms,
        "test",
        [],
        {},
        batches,
    )


def test_a_time_below_the_roofline_is_retimed_once_and_kept_when_the_second_measurement_is_plausible():
    calls = []

    def retime() -> BatchTiming:
        calls.append(1)
        return _timing(3.0, 1.2)

    flags: list[str] = []
    timing, roof = roofline.review(_timing(3.0, 0.01), 4 * GB, 4000.0, retime, flags)
    assert calls == [1] and flags == ["below_roofline_remeasured"]
    assert timing.candidate.median_ms == pytest.approx(1.2, rel=0.05) and not roof.below

    flags = []
    timing, roof = roofline.review(_timing(3.0, 1.2), 4 * GB, 4000.0, retime, flags)
    assert calls == [1] and flags == [] and roof.applies  # a plausible time is not re-measured


def test_a_calibration_artefact_that_stays_below_falls_back_to_unsubtracted_times_and_the_speedup_is_clamped():
    # The failure seen on the H200 (timing notes): a fixed cost read larger than the batches it is subtracted from,
    # so per-call times clamp near zero and an honest kernel reads as 10^5x.
    broken = _timing(3.0, 1e-6, fixed_ms=5.0)
    broken.batches_ms[1][:] = [4.0] * 10  # every candidate batch shorter than the 5 ms fixed cost
    flags: list[str] = []
    timing, roof = roofline.review(broken, 4 * GB, 4000.0, lambda: broken, flags)
    assert flags == ["below_roofline_remeasured", "below_roofline"]
    assert "timing_unsubtracted" in timing.flags and timing.candidate.median_ms == pytest.approx(1.0)

    still_below = roofline.check(4 * GB, 4000.0, reference_ms=3.0, candidate_ms=0.01)
    speedup, interval, clamped = roofline.clamp_speedup(300.0, (250.0, 350.0), still_below)
    assert clamped and speedup == pytest.approx(4.0) and interval == (pytest.approx(4.0), pytest.approx(4.0))
    plausible = roofline.check(4 * GB, 4000.0, reference_ms=3.0, candidate_ms=1.0)
    assert roofline.clamp_speedup(3.0, (2.9, 3.1), plausible) == (3.0, (2.9, 3.1), False)


def test_the_judge_records_the_roofline_and_clamps_a_speedup_that_stays_below_it(monkeypatch):
    """The wiring in ``verdict._time_candidate`` on CPU: its measurements replaced by timings where the memory floor
    allows 4x. At 10x (under ``implausible_speedup``) the roofline re-times it once; at 300x the implausible-speedup
    re-measurement is the only one. Both end flagged and clamped."""
    import contextlib
    import types

    import torch

    from kernel_reward.judge import verdict
    from kernel_reward.options import EvalOptions

    monkeypatch.setattr(verdict.gpu_state, "sample", lambda device: types.SimpleNamespace())
    monkeypatch.setattr(verdict.gpu_state, "around", lambda before, after: {})
    clock = types.SimpleNamespace(device=torch.device("cpu"), spans=unrecorded)

    def run(candidate_ms: float) -> EvalResult:
        timings = iter([_timing(3.0, candidate_ms), _timing(3.0, candidate_ms)])  # two measurements at most
        monkeypatch.setattr(verdict.measure, "compare_timed", lambda *args: next(timings))
        monkeypatch.setattr(verdict.measure, "measure", lambda *args, **kwargs: next(timings))
        result = EvalResult()
        verdict._time_candidate(
            clock,
            None,
            None,
            None,
            [],
            EvalOptions(),
            result,
            lambda name: contextlib.nullcontext(),
            (4 * GB, 4000.0),
        )
        assert result.roofline["below"] and result.roofline["floor_ms"] == pytest.approx(1.0)
        assert "speedup_clamped_to_roofline" in result.flags
        cap = result.roofline["reference_ms"] / (roofline.MARGIN * result.roofline["floor_ms"])  # ~4.2x
        assert result.speedup == pytest.approx(cap) and result.speedup_ci[1] == pytest.approx(cap)
        return result

    assert run(0.3).flags[:2] == ["below_roofline_remeasured", "below_roofline"]
    assert run(0.01).flags[:3] == ["implausible_speedup_remeasured", "implausible_speedup", "below_roofline"]


def test_results_carry_the_roofline_through_json():
    roof = roofline.check(4 * GB, 4000.0, 3.0, 1.0).to_dict()
    result = EvalResult(roofline=roof)
    assert EvalResult.from_dict(result.to_dict()).roofline == roof
    assert EvalResult.from_dict({"status": "correct"}).roofline is None  # results written before the field


@pytest.mark.gpu
def test_an_honest_kernel_respects_the_measured_roofline_on_the_gpu(evaluate_subprocess):
    """The fused add+relu on the big task: the floor applies (the reference reads its inputs), the candidate stays
    above it, and the copy bandwidth is in the range of real GPUs (H100 ~3 TB/s, H200 ~4 TB/s)."""
    from hack_corpus import as_completion, load_corpus

    entry = next(e for e in load_corpus() if e.name == "honest_add_relu_big_gpu")
    result = evaluate_subprocess(
        entry.reference, as_completion(entry.source), device="cuda", timing_budget_ms=100.0
    )
    assert result.status.value == "correct", (result.status, result.error)
    roof = result.roofline
    assert roof is not None and roof["applies"] and not roof["below"], roof
    assert 500 < roof["bandwidth_gbps"] < 20_000, roof
    assert result.kernel_time_ms >= roofline.MARGIN * roof["floor_ms"], roof
    assert not {"below_roofline", "speedup_clamped_to_roofline"} & set(result.flags)
