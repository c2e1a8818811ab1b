"""One evaluation run from an ``EvalConfig``: tasks -> evaluator -> completions or model -> outputs.

Wiring only; the logic lives in ``tasks``, ``harness``, ``report``. ``evaluator_factory`` can be replaced (tests
inject a counting evaluator); by default it builds ``kernel_reward.Evaluator``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cache import ResultCache
from .completions import read_completions
from .config import EvalConfig
from .harness import PairEvaluator, evaluate_model, evaluate_saved, run_tts
from .report import write_run
from .tasks import filter_tasks, load_dataset_tasks

logger = logging.getLogger(__name__)

EvaluatorFactory = Callable[[EvalConfig], contextlib.AbstractContextManager[PairEvaluator]]


def evaluator_options(config: EvalConfig) -> dict[str, Any]:
    """The kernel_reward options (EvalOptions fields) this run sets."""
    from kernel_reward.options import with_timeout

    return with_timeout({"baseline": config.baseline}, config.timeout)


def pool_options(config: EvalConfig) -> dict[str, Any]:
    """The kernel_reward pool settings (PoolConfig fields) this run sets: the launch ledger, unless auto."""
    return {} if config.launch_ledger == "auto" else {"launch_ledger": config.launch_ledger == "on"}


def evaluator_settings(config: EvalConfig) -> dict[str, Any]:
    """What changes verdicts, for the resume cache key: device, evaluator options and pool settings."""
    settings = {"device": config.device or "auto", "options": evaluator_options(config)}
    pool = pool_options(config)
    if pool:  # unset, the key stays as before, so earlier runs still resume
        settings["pool_options"] = pool
    return settings


def default_evaluator(config: EvalConfig) -> contextlib.AbstractContextManager[PairEvaluator]:
    """``kernel_reward.Evaluator`` for the configured device, timeout, workers and options."""
    from kernel_reward import Evaluator

    # progress=False: the harness shows its own bar over all turns.
    return Evaluator(
        device=config.device,
        workers=config.workers,
        progress=False,
        pool_options=pool_options(config) or None,
        **evaluator_options(config),
    )


def _model_fingerprint(path: str) -> str:
    """Identifies local weights by file names, sizes and modification times (a retrained model misses the
    cache); a Hub id is its own fingerprint."""
    folder = Path(path)
    if not folder.is_dir():
        return path
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = file.stat()
        digest.update(f"{file.relative_to(folder)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _sampling(config: EvalConfig) -> dict[str, Any]:
    return {
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "top_p": config.top_p,
        "seed": config.seed,
    }


def build_model_rollouts(config: EvalConfig, environment: Any) -> tuple[Any, Any, Callable[[Any], list[int]]]:
    """(multi-turn rollout, single-turn rollout for TTS, prompt renderer) for --model or --endpoint."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig

    from trl_ext.generation import TransformersBackend
    from trl_ext.rollout import MultiTurnRollout, render_prompt_ids

    tokenizer = AutoTokenizer.from_pretrained(config.model)
    if tokenizer.eos_token_id is None:
        raise ValueError(f"the tokenizer of {config.model} has no eos token (the end-of-turn token)")
    if config.endpoint:
        from .endpoint import EndpointBackend

        backend: Any = EndpointBackend(config.endpoint, config.model, tokenizer, _sampling(config))
    else:
        from transformers import AutoModelForCausalLM

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = AutoModelForCausalLM.from_pretrained(config.model).to(device)
        if config.adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, config.adapter).to(device)
        model.eval()
        greedy = config.temperature == 0
        generation = GenerationConfig(
            max_new_tokens=config.max_new_tokens,
            do_sample=not greedy,
            temperature=None if greedy else config.temperature,
            top_p=None if greedy else config.top_p,
            top_k=0,
            pad_token_id=tokenizer.pad_token_id
            if tokenizer.pad_token_id is not None
            else tokenizer.eos_token_id,
            eos_token_id=tokenizer.eos_token_id,
        )
        backend = TransformersBackend(
            lambda: contextlib.nullcontext(model),
            generation,
            generation.pad_token_id,
            [tokenizer.eos_token_id],
            device=device,
            batch_size=config.generation_batch_size,
        )

    def rollout(turns: int) -> Any:
        return MultiTurnRollout(
            backend, environment, tokenizer, max_turns=turns, end_of_turn_id=tokenizer.eos_token_id
        )

    return rollout(config.num_turns), rollout(1), lambda messages: render_prompt_ids(tokenizer, messages)


def run_evaluation(
    config: EvalConfig, evaluator_factory: EvaluatorFactory = default_evaluator
) -> dict[str, Any]:
    """Run the evaluation described by ``config``; writes everything under ``config.out``; returns the summary."""
    out = Path(config.out)
    tasks = load_dataset_tasks(config.dataset, split=config.split)
    settings = evaluator_settings(config)
    cache = ResultCache(out / "cache.jsonl")
    tts_records = None
    if config.completions:
        trajectories = read_completions(config.completions)
        present = {t.uuid for t in trajectories}
        known = {t.uuid for t in tasks}
        unknown = sorted(present - known)
        if unknown:
            raise ValueError(
                f"{config.completions}: task id(s) not in dataset {config.dataset}: {unknown[:10]}"
            )
        # With saved completions the task set is the tasks that have completions, then the filters.
        tasks = filter_tasks(
            [t for t in tasks if t.uuid in present], levels=config.levels, ids=config.ids, limit=config.limit
        )
        selected = {t.uuid for t in tasks}
        trajectories = [t for t in trajectories if t.uuid in selected]
        logger.info("evaluating %d saved trajectories of %d tasks", len(trajectories), len(tasks))
        with evaluator_factory(config) as evaluator:
            records = evaluate_saved(
                tasks,
                trajectories,
                evaluator,
                cache,
                evaluator_settings=settings,
                batch_size=config.batch_size,
            )
    else:
        tasks = filter_tasks(tasks, levels=config.levels, ids=config.ids, limit=config.limit)
        model_id = {
            "model": config.model,
            "endpoint": config.endpoint,
            "weights": _model_fingerprint(config.model),
            "adapter": config.adapter and _model_fingerprint(config.adapter),
        }
        sampling = _sampling(config)
        logger.info(
            "generating %d samples x %d turns for %d tasks", config.num_samples, config.num_turns, len(tasks)
        )
        with evaluator_factory(config) as evaluator:
            from kernel_reward.env import KernelEnvironment

            # the trainer's environment over our evaluator; every sample judged on its own, identical or not:
            # the metrics are over samples
            environment = KernelEnvironment(evaluator, share_identical=False)
            rollout, single_turn, render = build_model_rollouts(config, environment)
            records = evaluate_model(
                tasks,
                rollout,
                cache,
                num_samples=config.num_samples,
                num_turns=config.num_turns,
                model_id=model_id,
                sampling=sampling,
                evaluator_settings=settings,
                episodes_per_call=config.rollout_batch,
            )
            if config.tts_rounds:
                tts_records = run_tts(
                    records,
                    single_turn,
                    render,
                    cache,
                    rounds=config.tts_rounds,
                    window=config.tts_window,
                    model_id=model_id,
                    sampling=sampling,
                    evaluator_settings=settings,
                    episodes_per_call=config.rollout_batch,
                )
    return write_run(out, records, config=config.to_dict(), tts_records=tts_records)
