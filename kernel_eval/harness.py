"""The evaluation harness: N samples x T turns per task, every turn evaluated through the Evaluator.

Two sources of completions:

- saved completions (``evaluate_saved``): the turns are already written, so every turn of every sample is
  evaluated in one batched stream through ``Evaluator.evaluate_many`` (no model, no loop over turns); the
  prompt each turn saw is rebuilt from the task prompt and the feedback of the turns before it;
- a model (``evaluate_model``): generation goes through trl_ext's multi-turn rollout (the loop shared with the
  trainer) against ``kernel_reward.env.KernelEnvironment`` (the trainer's environment, so feedback turns read
  the same), with test-time scaling (``run_tts``) as an optional second phase.

Every finished turn is stored in a ``ResultCache`` keyed by (task, model, sampling, turn history, evaluator
settings), so a re-run recomputes nothing it already has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tqdm.auto import tqdm

from kernel_reward.env import feedback_turn
from kernel_reward.result import EvalResult
from kernel_reward.screen.extract import extract_code

from .cache import ResultCache, cache_key
from .completions import SavedTrajectory
from .records import EvaluatedTurn, Messages, SampleRecord
from .tasks import EvalTask

logger = logging.getLogger(__name__)


class PairEvaluator(Protocol):
    """What the harness needs from ``kernel_reward.Evaluator``: batched, order-preserving evaluation of
    (reference, candidate) pairs, or (reference, candidate, entry_point) where the entry point is not Model."""

    def evaluate_many(self, pairs: Sequence[tuple[str, ...]]) -> list[EvalResult]: ...


def evaluation_pair(reference: str, candidate: str, entry_point: str = "Model") -> tuple[str, ...]:
    """The evaluator input for one candidate (the entry point only travels when it is not the default)."""
    return (reference, candidate) if entry_point == "Model" else (reference, candidate, entry_point)


def feedback_message(result: EvalResult) -> str:
    """The user message that answers a turn, exactly as the training environment writes it (background §1)."""
    return feedback_turn(result)


def task_fingerprint(task: EvalTask) -> dict[str, Any]:
    """What identifies a task for the resume cache: its id, reference program and first prompt."""
    return {
        "uuid": task.uuid,
        "reference": cache_key(code=task.reference_code),
        "prompt": cache_key(p=task.prompt),
    }


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def evaluate_pairs_cached(
    jobs: Sequence[tuple[str, tuple[str, ...]]],
    evaluator: PairEvaluator,
    cache: ResultCache,
    *,
    batch_size: int,
    description: str,
) -> tuple[list[EvalResult], list[bool]]:
    """Evaluate (cache key, evaluator pair) jobs; cached keys are not sent to the evaluator.

    Returns the results in job order and, per job, whether it came from the cache.
    """
    results: list[EvalResult | None] = [None] * len(jobs)
    from_cache = [False] * len(jobs)
    todo: list[int] = []
    for i, (key, _) in enumerate(jobs):
        hit = cache.get(key)
        if hit is not None:
            results[i] = EvalResult.from_dict(hit["result"])
            from_cache[i] = True
        else:
            todo.append(i)
    if len(todo) < len(jobs):
        logger.info(
            "%s: %d of %d turns found in the resume cache", description, len(jobs) - len(todo), len(jobs)
        )
    with tqdm(total=len(todo), desc=description, unit="turn", disable=not todo) as bar:
        for chunk in _chunks(todo, batch_size):
            pairs = [jobs[i][1] for i in chunk]
            chunk_results = evaluator.evaluate_many(pairs)
            if len(chunk_results) != len(chunk):
                raise RuntimeError(
                    f"evaluator returned {len(chunk_results)} results for {len(chunk)} candidates"
                )
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

    jobs: list[tuple[str, tuple[str, ...]]] = []
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
            jobs.append(
                (
                    key,
                    evaluation_pair(task.reference_code, trajectory.completions[turn - 1], task.entry_point),
                )
            )
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
                EvaluatedTurn(
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
            prompt = [
                *prompt,
                {"role": "assistant", "content": completion},
                {"role": "user", "content": feedback_message(result)},
            ]
            position += 1
        records.append(record)
    return records


# --- model runs: generation through trl_ext's multi-turn rollout ---------------------------------------------


class Rollout(Protocol):
    """What the harness needs from ``trl_ext.rollout.MultiTurnRollout``."""

    def run(
        self, tasks: Sequence[dict[str, Any]], prompt_ids: Sequence[list[int]] | None = None
    ) -> list[Any]: ...


def task_row(task: EvalTask) -> dict[str, Any]:
    """The dataset-shaped row the rollout and the environment read (the dataset schema, the fields they use)."""
    return {
        "prompt": [dict(m) for m in task.prompt],
        "reward_model": {"style": "rule", "ground_truth": task.reference_code},
        "extra_info": {"uuid": task.uuid, "entry_point": task.entry_point, "level": task.level},
    }


def eval_result_from_step(step: Any) -> EvalResult:
    """The full EvalResult behind an environment step (``kernel_reward.env`` attaches it as
    ``details["eval_result"]``); a step without it cannot be reported faithfully, so it is an error."""
    attached = (getattr(step, "details", None) or {}).get("eval_result")
    if isinstance(attached, EvalResult):
        return attached
    if isinstance(attached, dict):
        return EvalResult.from_dict(attached)
    raise ValueError(
        f"environment step {type(step).__name__} carries no details['eval_result']; evaluation needs the full "
        "EvalResult (use kernel_reward.env.KernelEnvironment)"
    )


def _turns_from_trajectory(trajectory: Any) -> list[dict[str, Any]]:
    return [
        {"completion": t.completion, "result": eval_result_from_step(t.result).to_dict()}
        for t in trajectory.turns
    ]


def _records_from_turns(
    task: EvalTask,
    sample: int,
    turns: Sequence[dict[str, Any]],
    cached: bool,
    prompt: Messages | None = None,
    first_turn: int = 1,
    phase: str = "multi_turn",
) -> list[EvaluatedTurn]:
    records = []
    prompt = prompt if prompt is not None else [dict(m) for m in task.prompt]
    for offset, turn in enumerate(turns):
        result = EvalResult.from_dict(turn["result"])
        records.append(
            EvaluatedTurn(
                uuid=task.uuid,
                sample=sample,
                turn=first_turn + offset,
                prompt=prompt,
                completion=turn["completion"],
                code=extract_code(turn["completion"]),
                result=result,
                cached=cached,
                phase=phase,
            )
        )
        prompt = [
            *prompt,
            {"role": "assistant", "content": turn["completion"]},
            {"role": "user", "content": feedback_message(result)},
        ]
    return records


def evaluate_model(
    tasks: Sequence[EvalTask],
    rollout: Rollout,
    cache: ResultCache,
    *,
    num_samples: int,
    num_turns: int,
    model_id: dict[str, Any],
    sampling: dict[str, Any],
    evaluator_settings: dict[str, Any],
    episodes_per_call: int = 8,
) -> list[SampleRecord]:
    """``num_samples`` multi-turn trajectories per task through ``rollout``; finished samples are cached.

    A sample's key is (task, model, sampling, sample index, turns, evaluator settings): its whole history is
    determined by those, so a cached sample is not generated again.
    """
    import torch

    keys = {
        (task.uuid, s): cache_key(
            task=task_fingerprint(task),
            model=model_id,
            sampling=sampling,
            sample=s,
            num_turns=num_turns,
            history=[],
            evaluator=evaluator_settings,
        )
        for task in tasks
        for s in range(num_samples)
    }
    was_cached = {k for k, key in keys.items() if key in cache}
    todo = [(task, s) for task in tasks for s in range(num_samples) if (task.uuid, s) not in was_cached]
    if was_cached:
        logger.info("model run: %d of %d samples found in the resume cache", len(was_cached), len(keys))
    with tqdm(total=len(todo), desc="generating + evaluating", unit="sample", disable=not todo) as bar:
        for chunk in _chunks(todo, episodes_per_call):
            # Seeded per chunk from its first episode's key: the same pending samples draw the same text.
            torch.manual_seed(
                int(keys[(chunk[0][0].uuid, chunk[0][1])][:8], 16) ^ int(sampling.get("seed", 0))
            )
            trajectories = rollout.run([task_row(task) for task, _ in chunk])
            for (task, s), trajectory in zip(chunk, trajectories, strict=True):
                cache.put(keys[(task.uuid, s)], {"turns": _turns_from_trajectory(trajectory)})
            bar.update(len(chunk))
    stats = getattr(rollout, "stats", None)  # MultiTurnRollout's wall-clock split; test doubles have none
    if todo and stats is not None:
        logger.info(
            "model run: generation %.1f s, environment (reward) %.1f s over %d generation calls",
            stats.generation_s,
            stats.environment_s,
            stats.generation_calls,
        )
    records = []
    for task in tasks:
        for s in range(num_samples):
            turns = cache.get(keys[(task.uuid, s)])["turns"]
            records.append(
                SampleRecord(task, s, _records_from_turns(task, s, turns, (task.uuid, s) in was_cached))
            )
    return records


def run_tts(
    records: Sequence[SampleRecord],
    single_turn_rollout: Rollout,
    render_prompt: Callable[[Messages], list[int]],
    cache: ResultCache,
    *,
    rounds: int,
    window: int,
    model_id: dict[str, Any],
    sampling: dict[str, Any],
    evaluator_settings: dict[str, Any],
    episodes_per_call: int = 8,
) -> list[SampleRecord]:
    """Sequential test-time scaling after the multi-turn phase (see ``ttscaling``).

    Each round, every sample's context is its first prompt plus its best ``window`` turns so far; one turn is
    generated and evaluated (``single_turn_rollout`` runs one turn per episode) and appended to the full
    history. Returns new records holding the multi-turn turns followed by the TTS rounds.
    """
    import torch

    from .ttscaling import HistoryTurn, context_messages, select_context

    out = [SampleRecord(r.task, r.sample, list(r.turns)) for r in records]
    for round_index in range(1, rounds + 1):
        jobs = []
        for record in out:
            history = [
                HistoryTurn(t.turn, t.completion, feedback_message(t.result), t.result.reward)
                for t in record.turns
            ]
            selected = select_context(history, window)
            messages = context_messages(record.task.prompt, history, window)
            key = cache_key(
                task=task_fingerprint(record.task),
                model=model_id,
                sampling=sampling,
                sample=record.sample,
                tts_round=round_index,
                history=[(h.completion, h.feedback, h.reward) for h in selected],
                evaluator=evaluator_settings,
            )
            jobs.append((record, messages, key))
        todo = [job for job in jobs if job[2] not in cache]
        for chunk in tqdm(
            _chunks(todo, episodes_per_call),
            desc=f"test-time scaling round {round_index}/{rounds}",
            disable=not todo,
        ):
            torch.manual_seed(int(chunk[0][2][:8], 16) ^ int(sampling.get("seed", 0)))
            trajectories = single_turn_rollout.run(
                [task_row(record.task) for record, _, _ in chunk],
                prompt_ids=[render_prompt(messages) for _, messages, _ in chunk],
            )
            for (_, _, key), trajectory in zip(chunk, trajectories, strict=True):
                cache.put(key, {"turns": _turns_from_trajectory(trajectory)[:1]})
        cached = {job[2] for job in jobs} - {job[2] for job in todo}
        for record, messages, key in jobs:
            record.turns += _records_from_turns(
                record.task,
                record.sample,
                cache.get(key)["turns"],
                key in cached,
                prompt=messages,
                first_turn=len(record.turns) + 1,
                phase="tts",
            )
    return out
