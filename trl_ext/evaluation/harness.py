"""The evaluation harness: N samples x T turns per task, every turn evaluated through the Evaluator.

Two sources of completions:

- saved completions (``evaluate_saved``): the turns are already written, so every turn of every sample is
  evaluated in one batched stream through ``Evaluator.evaluate_many`` (no model, no loop over turns); the
  prompt each turn saw is rebuilt from the task prompt and the feedback of the turns before it;
- a model (``evaluate_model``): generation goes through trl_ext's multi-turn rollout (the loop shared with the
  trainer), with test-time scaling (``run_tts``) as an optional second phase.

Every finished turn is stored in a ``ResultCache`` keyed by (task, model, sampling, turn history, evaluator
settings), so a re-run recomputes nothing it already has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tqdm.auto import tqdm

from kernel_reward.extract import extract_code
from kernel_reward.result import EvalResult

from .cache import ResultCache, cache_key
from .completions import SavedTrajectory
from .metrics import Outcome
from .tasks import EvalTask

logger = logging.getLogger(__name__)

Messages = list[dict[str, str]]


class PairEvaluator(Protocol):
    """What the harness needs from ``kernel_reward.Evaluator``: batched, order-preserving evaluation."""

    def evaluate_many(self, pairs: Sequence[tuple[str, str]]) -> list[EvalResult]: ...


@dataclass
class TurnRecord:
    """One evaluated turn: what the model saw, what it wrote, what was extracted, and the verdict."""

    uuid: str
    sample: int
    turn: int  # 1-based
    prompt: Messages  # the chat the model answered
    completion: str
    code: str | None  # the extracted code (None: format error)
    result: EvalResult
    cached: bool = False  # loaded from the resume cache rather than computed in this run
    phase: str = "multi_turn"  # "multi_turn" or "tts" (test-time scaling round)

    @property
    def outcome(self) -> Outcome:
        return Outcome.from_result(self.result)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "sample": self.sample,
            "turn": self.turn,
            "phase": self.phase,
            "cached": self.cached,
            "prompt": self.prompt,
            "completion": self.completion,
            "code": self.code,
            "result": self.result.to_dict(),
        }


@dataclass
class SampleRecord:
    """All turns of one sample (trajectory) of one task."""

    task: EvalTask
    sample: int
    turns: list[TurnRecord] = field(default_factory=list)

    @property
    def outcomes(self) -> list[Outcome]:
        return [t.outcome for t in self.turns]


def feedback_message(result: EvalResult) -> str:
    """The user message that answers a turn: the evaluator's feedback text (FACTS 1, feedback turn)."""
    return result.feedback


def task_fingerprint(task: EvalTask) -> dict[str, Any]:
    """What identifies a task for the resume cache: its id, reference program and first prompt."""
    return {"uuid": task.uuid, "reference": cache_key(code=task.reference_code), "prompt": cache_key(p=task.prompt)}


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def evaluate_pairs_cached(
    jobs: Sequence[tuple[str, str, str]],
    evaluator: PairEvaluator,
    cache: ResultCache,
    *,
    batch_size: int,
    description: str,
) -> tuple[list[EvalResult], list[bool]]:
    """Evaluate (cache key, reference, completion) jobs; cached keys are not sent to the evaluator.

    Returns the results in job order and, per job, whether it came from the cache.
    """
    results: list[EvalResult | None] = [None] * len(jobs)
    from_cache = [False] * len(jobs)
    todo: list[int] = []
    for i, (key, _, _) in enumerate(jobs):
        hit = cache.get(key)
        if hit is not None:
            results[i] = EvalResult.from_dict(hit["result"])
            from_cache[i] = True
        else:
            todo.append(i)
    if len(todo) < len(jobs):
        logger.info("%s: %d of %d turns found in the resume cache", description, len(jobs) - len(todo), len(jobs))
    with tqdm(total=len(todo), desc=description, unit="turn", disable=not todo) as bar:
        for chunk in _chunks(todo, batch_size):
            pairs = [(jobs[i][1], jobs[i][2]) for i in chunk]
            chunk_results = evaluator.evaluate_many(pairs)
            if len(chunk_results) != len(chunk):
                raise RuntimeError(f"evaluator returned {len(chunk_results)} results for {len(chunk)} candidates")
            for i, result in zip(chunk, chunk_results, strict=True):
                results[i] = result
                cache.put(jobs[i][0], {"result": result.to_dict()})
            bar.update(len(chunk))
    return [r for r in results if r is not None], from_cache


def evaluate_saved(
    tasks: Sequence[EvalTask],
    trajectories: Sequence[SavedTrajectory],
    evaluator: PairEvaluator,
    cache: ResultCache,
    *,
    evaluator_settings: dict[str, Any],
    batch_size: int = 8,
) -> list[SampleRecord]:
    """Evaluate every turn of saved trajectories of ``tasks``.

    Trajectories of tasks outside ``tasks`` are an error unless filtered out by the caller first; every
    task in ``tasks`` must have at least one trajectory.
    """
    by_uuid = {t.uuid: t for t in tasks}
    unknown = sorted({t.uuid for t in trajectories} - set(by_uuid))
    if unknown:
        raise ValueError(f"saved completions name task(s) not among the selected tasks: {unknown[:10]}")
    missing = sorted(set(by_uuid) - {t.uuid for t in trajectories})
    if missing:
        raise ValueError(f"no saved completions for selected task(s) {missing[:10]}")

    jobs: list[tuple[str, str, str]] = []
    for trajectory in trajectories:
        task = by_uuid[trajectory.uuid]
        for turn in range(1, len(trajectory.completions) + 1):
            key = cache_key(
                task=task_fingerprint(task),
                model="saved-completions",
                sampling=None,
                history=list(trajectory.completions[:turn]),
                evaluator=evaluator_settings,
            )
            jobs.append((key, task.reference_code, trajectory.completions[turn - 1]))
    results, from_cache = evaluate_pairs_cached(
        jobs, evaluator, cache, batch_size=batch_size, description="evaluating saved completions"
    )

    records: list[SampleRecord] = []
    position = 0
    for trajectory in trajectories:
        task = by_uuid[trajectory.uuid]
        record = SampleRecord(task=task, sample=trajectory.sample)
        prompt: Messages = [dict(m) for m in task.prompt]
        for turn, completion in enumerate(trajectory.completions, start=1):
            result = results[position]
            record.turns.append(
                TurnRecord(
                    uuid=task.uuid,
                    sample=trajectory.sample,
                    turn=turn,
                    prompt=prompt,
                    completion=completion,
                    code=extract_code(completion),
                    result=result,
                    cached=from_cache[position],
                )
            )
            prompt = [*prompt, {"role": "assistant", "content": completion},
                      {"role": "user", "content": feedback_message(result)}]
            position += 1
        records.append(record)
    return records


Generate = Callable[[list[Messages], list[int]], list[str]]
