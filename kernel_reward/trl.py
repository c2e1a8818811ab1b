"""The kernel reward as a TRL reward function: ``GRPOTrainer(reward_funcs=[KernelReward()])``.

Contract (STYLE 6): ``(completions, **kwargs) -> list[float | None]``. Each row's reference program comes from the
dataset columns TRL passes through as keyword lists: ``reward_model`` ({"style", "ground_truth"}) and
``extra_info`` ({"entry_point", ...}). Completions may be plain strings or conversational message lists. All
completions of a call are evaluated in parallel through one ``Evaluator`` (started on first use, so the object
stays small and picklable). ``None`` means "could not score" (the execution service failed, not the candidate);
TRL turns it into NaN. Batch statistics go to TRL's ``log_metric`` hook (``kernel/compile_rate``,
``kernel/correct_rate``, ``kernel/hacked_rate``, ``kernel/mean_speedup``, ``kernel/mean_coverage``,
``kernel/unscored_rate``) and the verdict of each row to the completions table through ``log_extra``.
Identical completions of one row's reference are judged once and paid alike (``share_identical``, default True;
``Evaluator.evaluate_many``).
"""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Callable, Sequence
from typing import Any

from kernel_reward.result import EvalResult, Status


def completion_text(completion: Any) -> str:
    """The text of a completion: a string, or the last assistant message of a conversational completion."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and all(isinstance(m, dict) for m in completion):
        for message in reversed(completion):
            if message.get("role", "assistant") == "assistant":
                return str(message.get("content") or "")
    raise TypeError(
        f"KernelReward: a completion must be a string or a list of messages, got {type(completion).__name__}"
    )


def unscored(result: EvalResult) -> bool:
    """True when the service, not the candidate, failed: the sample should not be rewarded either way."""
    return not result.scored


def batch_metrics(results: Sequence[EvalResult]) -> dict[str, float]:
    """Rates over the scored results, mean speedup / coverage over the correct ones that have them (pure)."""
    scored = [r for r in results if not unscored(r)]
    metrics = {"kernel/unscored_rate": (len(results) - len(scored)) / len(results) if results else 0.0}
    if scored:
        metrics["kernel/compile_rate"] = sum(r.compiled for r in scored) / len(scored)
        metrics["kernel/correct_rate"] = sum(r.status == Status.CORRECT for r in scored) / len(scored)
        metrics["kernel/hacked_rate"] = sum(r.hacked for r in scored) / len(scored)
    speedups = [r.speedup for r in scored if r.status == Status.CORRECT and r.speedup is not None]
    coverages = [r.coverage for r in scored if r.status == Status.CORRECT and r.coverage is not None]
    if speedups:
        metrics["kernel/mean_speedup"] = statistics.fmean(speedups)
    if coverages:
        metrics["kernel/mean_coverage"] = statistics.fmean(coverages)
    return metrics


class KernelReward:
    """Reward function for TRL trainers; see the module docstring."""

    __name__ = "kernel_reward"  # TRL names the reward column and its metrics after this

    def __init__(
        self,
        *,
        device: str | None = None,
        timeout: float | None = None,
        backend: str = "local",
        evaluator_kwargs: dict[str, Any] | None = None,
        share_identical: bool = True,
        **options: Any,
    ) -> None:
        self.device = device
        self.timeout = timeout
        self.backend = backend
        self.evaluator_kwargs = dict(evaluator_kwargs or {})
        self.options = options
        self.share_identical = share_identical
        self.last_results: list[EvalResult] = []
        self._evaluator = None
        self._lock = threading.Lock()

    # Pickling ships the configuration only; each process starts its own evaluator on first use.
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.update(_evaluator=None, _lock=None, last_results=[])
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def evaluator(self):
        with self._lock:
            if self._evaluator is None:
                from kernel_reward.evaluator import Evaluator

                self._evaluator = Evaluator(
                    device=self.device,
                    timeout=self.timeout,
                    backend=self.backend,
                    **self.evaluator_kwargs,
                    **self.options,
                )
            return self._evaluator

    def close(self) -> None:
        with self._lock:
            if self._evaluator is not None:
                self._evaluator.close()
                self._evaluator = None

    def __call__(
        self,
        completions: Sequence[Any],
        *,
        reward_model: Sequence[dict[str, Any]] | None = None,
        extra_info: Sequence[dict[str, Any] | None] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list], None] | None = None,
        **_: Any,
    ) -> list[float | None]:
        if reward_model is None:
            raise ValueError(
                "KernelReward needs the dataset's `reward_model` column (with `ground_truth`, the "
                "reference program) among the reward kwargs; TRL passes every dataset column through"
            )
        if len(reward_model) != len(completions):
            raise ValueError(
                f"KernelReward: {len(completions)} completions but {len(reward_model)} reward_model rows"
            )
        if extra_info is not None and len(extra_info) != len(completions):
            raise ValueError(
                f"KernelReward: {len(completions)} completions but {len(extra_info)} extra_info rows"
            )
        pairs = []
        for i, completion in enumerate(completions):
            row = reward_model[i] or {}
            reference = row.get("ground_truth")
            if not isinstance(reference, str) or not reference.strip():
                raise ValueError(
                    f"KernelReward: row {i} has no reference program in reward_model['ground_truth']"
                )
            entry_point = ((extra_info[i] if extra_info is not None else None) or {}).get(
                "entry_point"
            ) or "Model"
            pairs.append((reference, completion_text(completion), entry_point))
        results = self.evaluator.evaluate_many(pairs, share_identical=self.share_identical)
        self.last_results = results
        if log_metric is not None:
            for name, value in batch_metrics(results).items():
                log_metric(name, value)
        if log_extra is not None:
            log_extra("kernel_status", [r.status.value for r in results])
        return [None if unscored(r) or not math.isfinite(r.reward) else float(r.reward) for r in results]
