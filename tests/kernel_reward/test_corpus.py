"""The hack corpus: every candidate in hack_corpus/entries must get its recorded verdict.

CPU entries run under the Triton interpreter in a one-shot worker subprocess each (slow: CI runs the same verdicts
through the pool, test_corpus_pool.py); the GPU test runs the whole corpus, GPU-only entries included, on CUDA.
Honest entries must pass: zero false positives.
"""

from __future__ import annotations

import pytest

from hack_corpus import CorpusEntry, as_completion, load_corpus
from tests.kernel_reward.corpus_cases import CORPUS, CPU_CORPUS, LEDGER, as_params, check_verdict


@pytest.mark.slow  # the same verdicts through the pool: test_corpus_pool.py, in the default run
@pytest.mark.parametrize("entry", as_params(CPU_CORPUS))
def test_corpus_verdict_cpu(entry: CorpusEntry, evaluate_subprocess):
    result = evaluate_subprocess(entry.reference, as_completion(entry.source), device="cpu", **entry.options)
    assert result.mode == "interpreter" or result.status.value in ("hacked", "compile_error", "format_error")
    check_verdict(entry, result, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("entry", as_params(CORPUS, ledger=LEDGER))
def test_corpus_verdict_gpu(entry: CorpusEntry, evaluate_subprocess):
    result = evaluate_subprocess(
        entry.reference, as_completion(entry.source), device="cuda", timing_budget_ms=100.0, **entry.options
    )
    check_verdict(entry, result, "cuda")
    if result.status.value == "correct":
        assert result.timing_available and result.speedup is not None and result.speedup > 0
        low, high = result.speedup_ci
        assert low <= result.speedup <= high


def test_ipc_objects_do_not_outlive_a_candidate(evaluate_subprocess):
    """sandbox_sysv_queue leaves a message in a SysV queue for the next candidate and is right only if it finds
    one: evaluated twice in a row, the second run must not find the first one's message."""
    import ctypes

    entry = next(e for e in CORPUS if e.name == "sandbox_sysv_queue")
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        for _ in range(2):
            result = evaluate_subprocess(entry.reference, as_completion(entry.source), device="cpu")
            check_verdict(entry, result, "cpu")
    finally:  # a queue that did escape must not stay on the host
        queue = libc.msgget(0x4B52_5751, 0)
        if queue >= 0:
            libc.msgctl(queue, 0, None)
    assert queue < 0, "the candidate's message queue outlived it on the host"


def test_adversarial_entries_never_expect_correct():
    """The attacks on the judge (forged frames, tampering, peeking, timing, sandbox probes) are wrong answers by
    construction: the only way to be scored correct is for the attack to work."""
    attacks = [e for e in CORPUS if e.is_attack]
    assert len(attacks) >= 15
    assert all("correct" not in entry.expect.split("|") for entry in attacks)


def test_every_expected_reason_is_one_a_check_gives():
    from kernel_reward.judge.correctness import HackReason
    from kernel_reward.screen.static_checks import StaticReason

    known = {reason.value for reason in [*HackReason, *StaticReason]}
    unknown = {
        (entry.name, reason) for entry in load_corpus() for reason in entry.reasons if reason not in known
    }
    assert not unknown, (
        f"reasons no check gives (a GPU-only entry would fail only on a GPU): {sorted(unknown)}"
    )
    assert any(len(entry.reasons) > 1 for entry in load_corpus())  # the a|b form is read as two


def test_open_gaps_are_named_in_the_security_model():
    """An entry that still wins names its gap, and docs/security.md's "Known gaps" cites the entry."""
    from pathlib import Path

    known_gaps = (
        (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text().split("## Known gaps")[1]
    )
    for entry in (e for e in CORPUS if e.open_gap):
        assert entry.is_attack, f"{entry.name}: only an attack can name an open gap"
        assert f"`{entry.name}`" in known_gaps, f"{entry.name}: not cited under docs/security.md's Known gaps"


def test_corpus_covers_every_category():
    names = {entry.name for entry in CORPUS}
    statuses = {status for entry in CORPUS for status in entry.expect.split("|")}
    assert {"correct", "hacked", "incorrect", "compile_error", "runtime_error"} <= statuses
    assert sum(entry.expect == "correct" for entry in CORPUS) >= 3
    assert len(names) >= 30


@pytest.mark.gpu
def test_compile_baseline_times_the_compiled_reference(evaluate_subprocess):
    """baseline="compile": the honest kernel stays correct (judged against eager) and is timed against
    torch.compile(reference); the result says which baseline it was measured against."""
    entry = next(e for e in CORPUS if e.name == "honest_add_relu_big_gpu")
    result = evaluate_subprocess(
        entry.reference,
        as_completion(entry.source),
        device="cuda",
        timing_budget_ms=100.0,
        baseline="compile",
    )
    check_verdict(entry, result, "cuda")
    assert "baseline_compile" in result.flags
    assert result.reference_time_ms is not None and result.reference_time_ms > 0


@pytest.mark.gpu
def test_implausible_speedup_is_remeasured_and_flagged(evaluate_subprocess):
    """A speedup above ``implausible_speedup`` is measured a second time and flagged when it holds. The fused
    add+relu kernel moves 3 tensors where eager moves 5, so on a GPU it beats the bound 1.001 set here."""
    entry = next(e for e in CORPUS if e.name == "honest_add_relu_big_gpu")
    result = evaluate_subprocess(
        entry.reference,
        as_completion(entry.source),
        device="cuda",
        timing_budget_ms=100.0,
        implausible_speedup=1.001,
    )
    assert result.status.value == "correct" and result.speedup > 1.001, (
        result.status,
        result.speedup,
        result.error,
    )
    assert "implausible_speedup_remeasured" in result.flags and "implausible_speedup" in result.flags


@pytest.mark.gpu
def test_event_coverage_agrees_with_the_profiler(evaluate_subprocess):
    """coverage_method="events" (no CUPTI) against torch.profiler on one honest single-kernel candidate
    (coverage near 1) and one that leaves the relu to torch (the Triton add is about 3/5 of the device time)."""
    for name, whole in (("honest_add_relu_big_gpu", True), ("honest_partial_add_torch_relu_gpu", False)):
        entry = next(e for e in CORPUS if e.name == name)
        coverage = {}
        for method in ("profiler", "events"):
            result = evaluate_subprocess(
                entry.reference,
                as_completion(entry.source),
                device="cuda",
                timing_budget_ms=50.0,
                coverage_method=method,
            )
            assert result.status.value == "correct", (method, result.status, result.error)
            coverage[method] = result.coverage
            assert result.kernel_table and any(row.from_candidate for row in result.kernel_table)
        assert abs(coverage["events"] - coverage["profiler"]) < 0.1, (name, coverage)
        assert (coverage["events"] > 0.9) == whole, (name, coverage)
