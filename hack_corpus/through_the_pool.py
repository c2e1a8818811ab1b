"""Judge corpus entries through the evaluation service users run: one ``kernel_reward.Evaluator`` pool, every entry
in one ``evaluate_many``, with the options the one-shot corpus test uses on each device."""

from __future__ import annotations

from typing import Any

from hack_corpus import CorpusEntry, as_completion


def judge_through_the_pool(
    entries: list[CorpusEntry],
    device: str,
    *,
    launch_ledger: bool,
    timeout_s: float | None = None,
    progress: bool | None = False,
) -> list[Any]:
    """Each entry's ``EvalResult``, in the entries' order. On a GPU ``launch_ledger`` sets the pool's launch ledger
    (off means off: a GPU pool's default is on) and calls are timed with a 100 ms budget, as the one-shot test.
    ``progress``: the pool's progress bar (None: the Evaluator's default, a bar on long runs)."""
    from kernel_reward import Evaluator

    extra: dict[str, Any] = {"timing_budget_ms": 100.0} if device == "cuda" else {}
    pool_options = {"launch_ledger": launch_ledger} if device == "cuda" else {}
    with Evaluator(
        device=device,
        timeout=timeout_s,
        seed_base=1234,
        pool_options=pool_options,
        progress=progress,
        **extra,
    ) as evaluator:
        requests = [
            evaluator.make_request(e.reference, as_completion(e.source), **e.options) for e in entries
        ]
        return evaluator.evaluate_many(requests)
