"""The hack corpus's entries as test cases, and the check of one entry's verdict, shared by the one-shot corpus test
(``test_corpus.py``) and the pool's (``test_corpus_pool.py``)."""

from __future__ import annotations

import os

import pytest

from hack_corpus import CorpusEntry, load_corpus
from tests.kernel_reward.conftest import LEDGER_ENV

LEDGER = os.environ.get(LEDGER_ENV) == "1"  # GPU evaluations run with the launch ledger
CORPUS = load_corpus()
CPU_CORPUS = [entry for entry in CORPUS if not entry.gpu_only]


def as_params(entries: list[CorpusEntry], ledger: bool = False) -> list:
    """Each entry as a test case; one that names an open gap is a strict expected failure: it must still win
    (the test fails while the attack wins), and the day it is caught the test fails until the marker goes. With
    the launch ledger on, a gap the ledger closes is no longer open: the entry must get its verdict."""
    return [
        pytest.param(
            entry,
            id=entry.name,
            marks=[pytest.mark.xfail(strict=True, reason=f"open gap: {entry.open_gap}")]
            if entry.is_open(ledger)
            else [],
        )
        for entry in entries
    ]


def check_verdict(entry: CorpusEntry, result, device: str) -> None:
    accepted = entry.expected_status(device).split("|")
    expected = result.status.value if result.status.value in accepted else accepted[0]
    assert result.status.value == expected, (
        f"{entry.name}: expected {expected}, got {result.status.value}; reasons={result.hack_reasons}; "
        f"error={(result.error or '')[:1500]}"
    )
    if entry.reasons:
        assert set(entry.reasons) & set(result.hack_reasons), (
            f"{entry.name}: none of {entry.reasons} in {result.hack_reasons}"
        )
    assert result.hacked == (expected == "hacked")
    assert result.correct == (expected == "correct")
    if expected == "correct":
        assert result.launched_kernels, "a correct candidate must have launched its own kernel"
        assert result.reward > 0
        if device == "cuda" and LEDGER:  # the ledger decided, not the runner's table
            assert "coverage_from_launch_ledger" in result.flags, result.flags
    else:
        assert result.reward <= 0
    if entry.shape_passed is not None:
        assert result.shape_generalization.get("passed") is entry.shape_passed, result.shape_generalization
