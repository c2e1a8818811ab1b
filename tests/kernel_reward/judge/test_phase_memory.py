"""kernel_reward.judge.phase_memory: the judge's peak allocated bytes per evaluation phase."""

import pytest
import torch

from kernel_reward.judge.phase_memory import PhasePeaks


class FakeAllocator:
    """``max_memory_allocated`` / ``reset_peak_memory_stats`` over a scripted allocation level."""

    def __init__(self) -> None:
        self.current = 0
        self.peak = 0

    def allocate(self, size: int) -> None:
        self.current += size
        self.peak = max(self.peak, self.current)

    def free(self, size: int) -> None:
        self.current -= size

    def reset(self) -> None:
        self.peak = self.current


def test_each_phase_keeps_its_own_peak_and_the_largest_over_repetitions():
    memory = FakeAllocator()
    peaks = PhasePeaks(read=lambda: memory.peak, reset=memory.reset)
    memory.allocate(100)  # before any phase: nobody's
    with peaks.phase("build"):
        memory.allocate(900)
        memory.free(900)
    with peaks.phase("timing"):
        memory.allocate(50)
        memory.free(50)
    with peaks.phase("timing"):
        memory.allocate(400)
        memory.free(400)
    assert peaks.peaks == {"build": 1000, "timing": 500}


def test_an_inner_phase_counts_for_the_phases_around_it():
    memory = FakeAllocator()
    peaks = PhasePeaks(read=lambda: memory.peak, reset=memory.reset)
    with peaks.phase("outer"):
        memory.allocate(10)
        with peaks.phase("inner"):
            memory.allocate(1000)
            memory.free(1000)
        memory.allocate(20)
    assert peaks.peaks == {"outer": 1010, "inner": 1010}


def test_a_cpu_evaluation_measures_nothing():
    peaks = PhasePeaks(torch.device("cpu"))
    with peaks.phase("correctness"):
        pass
    assert not peaks.enabled and peaks.peaks == {}


@pytest.mark.gpu
def test_a_gpu_evaluation_reports_the_judges_peak_per_phase_beside_the_tasks_bytes(evaluate_subprocess):
    from hack_corpus import as_completion, load_corpus

    entry = next(e for e in load_corpus() if e.name == "honest_add_relu_big_gpu")
    result = evaluate_subprocess(
        entry.reference, as_completion(entry.source), device="cuda", timing_budget_ms=50.0
    )
    assert result.status.value == "correct", (result.status, result.error)
    peaks = result.memory["judge_peak_bytes"]
    assert {"build", "correctness", "timing"} <= set(peaks), peaks
    assert result.memory["call_bytes"] > 0
    assert max(peaks.values()) >= result.memory["call_bytes"]  # the judge holds at least one call's tensors
