"""The hack corpus through the evaluation service users run: every entry in one ``Evaluator.evaluate_many``
(zygote, sandboxed runners, the pool's timing slot, and on a GPU the launch ledger as ``KR_TEST_LAUNCH_LEDGER``
says), with the verdicts the one-shot corpus test expects (``test_corpus.py``). Hostile candidates share the pool
as they would in training, and the whole corpus costs one pool's throughput instead of a fresh process each
(the 78 CPU entries: about 20 s on two CPU cores, against 375 s one-shot, which is therefore marked slow)."""

from __future__ import annotations

import pytest

from hack_corpus import CorpusEntry
from hack_corpus.through_the_pool import judge_through_the_pool
from kernel_reward.result import EvalResult
from tests.kernel_reward.corpus_cases import CORPUS, CPU_CORPUS, LEDGER, as_params, check_verdict


def verdicts_by_name(request, test_name: str, device: str) -> dict[str, EvalResult]:
    """The verdicts of the entries whose ``test_name`` cases this session runs (``-k`` narrows the pool's work)."""
    chosen = {
        item.callspec.params["entry"].name
        for item in request.session.items
        if getattr(item, "originalname", None) == test_name and hasattr(item, "callspec")
    }
    entries = [entry for entry in CORPUS if entry.name in chosen]
    results = judge_through_the_pool(entries, device, launch_ledger=LEDGER)
    return {entry.name: result for entry, result in zip(entries, results, strict=True)}


@pytest.fixture(scope="module")
def cpu_verdicts(request) -> dict[str, EvalResult]:
    return verdicts_by_name(request, "test_corpus_verdict_cpu_pool", "cpu")


@pytest.fixture(scope="module")
def gpu_verdicts(request) -> dict[str, EvalResult]:
    return verdicts_by_name(request, "test_corpus_verdict_gpu_pool", "cuda")


@pytest.mark.parametrize("entry", as_params(CPU_CORPUS))
def test_corpus_verdict_cpu_pool(entry: CorpusEntry, cpu_verdicts):
    result = cpu_verdicts[entry.name]
    assert result.mode == "interpreter" or result.status.value in ("hacked", "compile_error", "format_error")
    check_verdict(entry, result, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("entry", as_params(CORPUS, ledger=LEDGER))
def test_corpus_verdict_gpu_pool(entry: CorpusEntry, gpu_verdicts):
    result = gpu_verdicts[entry.name]
    check_verdict(entry, result, "cuda")
    if result.status.value == "correct":
        assert result.timing_available and result.speedup is not None and result.speedup > 0
