"""``kernel_reward.evaluate``: evaluate one candidate, the simplest entry point of the package.

Runs through a shared, lazily started ``Evaluator`` per device (so repeated calls reuse warm, sandboxed worker
processes instead of paying process start-up each time); the shared evaluators are closed at interpreter exit.
"""

from __future__ import annotations

import threading
from typing import Any

from kernel_reward.evaluator import Evaluator
from kernel_reward.options import with_timeout
from kernel_reward.result import EvalResult

_shared: dict[str, Evaluator] = {}
_lock = threading.Lock()


def shared_evaluator(device: str | None = None) -> Evaluator:
    """The process-wide Evaluator for ``device`` (created on first use)."""
    key = device or "auto"
    with _lock:
        evaluator = _shared.get(key)
        if evaluator is None:
            evaluator = _shared[key] = Evaluator(device=device)
        return evaluator


def close_shared() -> None:
    """Stop every shared evaluator's worker processes (also done at interpreter exit)."""
    with _lock:
        evaluators = list(_shared.values())
        _shared.clear()
    for evaluator in evaluators:
        evaluator.close()


def evaluate(
    reference_code: str,
    candidate: str,
    *,
    entry_point: str = "Model",
    device: str | None = None,
    timeout: float | None = None,
    **options: Any,
) -> EvalResult:
    """Evaluate ``candidate`` (a raw completion or plain code) against the PyTorch program ``reference_code``.

    ``device``: None (a GPU when there is one, else the CPU interpreter), "cpu", "cuda" or "cuda:N".
    ``timeout``: per-candidate wall-clock limit in seconds (default ``EvalOptions.timeout_s``).
    ``options``: any ``EvalOptions`` field, e.g. ``num_trials=3`` or ``reward_scheme="paper"``.
    """
    options = with_timeout(options, timeout)
    return shared_evaluator(device).evaluate(reference_code, candidate, entry_point=entry_point, **options)
