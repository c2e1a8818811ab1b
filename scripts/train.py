"""Train a model with multi-turn TRLOO (+ MRS / PR / PRS) against the kernel reward.

    python scripts/train.py --config recipes/tiny_cpu.yaml
    accelerate launch --config_file TRL_DIR/accelerate_configs/fsdp2.yaml scripts/train.py --config recipes/qwen3_8b_trloo.yaml

(TRL_DIR: the installed trl package's folder; see the recipe.)

Every ``MultiTurnKernelConfig`` (GRPOConfig), ``ModelConfig`` (incl. LoRA: ``--use_peft``) and script option
below can be set in the YAML or on the command line (``--help`` lists them). Checkpoints go to ``output_dir``;
``--resume_from_checkpoint PATH`` (or ``true`` for the latest) resumes.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from trl import ModelConfig, ScriptArguments, TrlParser  # noqa: E402

from trl_ext.attention_backend import AttentionBackendArguments  # noqa: E402
from trl_ext.config import MultiTurnKernelConfig  # noqa: E402

logger = logging.getLogger("train")


@dataclass
class TrainScriptArguments(ScriptArguments, AttentionBackendArguments):
    """Dataset, environment and attention-backend options (``dataset_name``: a Hub id or a local dataset folder)."""

    environment: Literal["kernel", "toy"] = field(
        default="kernel",
        metadata={
            "help": "'kernel': kernel_reward's evaluator; 'toy': the digit-guessing toy (no dataset needed)."
        },
    )
    toy_tasks: int = field(default=64, metadata={"help": "Number of toy tasks when environment='toy'."})
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N training rows (None: all)."}
    )
    eos_token: str | None = field(
        default=None,
        metadata={
            "help": "Override the tokenizer's eos token (must be the chat template's end-of-turn token)."
        },
    )
    max_train_seconds: float | None = field(
        default=None,
        metadata={
            "help": "Stop after the first optimizer step that ends past this many seconds (then save)."
        },
    )
    probe_dataset: str | None = field(
        default=None,
        metadata={
            "help": "A dataset (Hub id or local folder, its train split) whose first probe_tasks rows are evaluated "
            "during training as TRL's eval set: set --eval_strategy steps --eval_steps N (and num_generations_eval, "
            "per_device_eval_batch_size); the eval_turn_k/* metrics go to log_history.json."
        },
    )
    probe_tasks: int = field(default=16, metadata={"help": "Rows of --probe_dataset to evaluate."})


def load_train_dataset(script_args: TrainScriptArguments, seed: int):
    from datasets import Dataset

    from trl_ext.script_input import load_dataset_or_exit

    if script_args.environment == "toy":
        from trl_ext.env import make_toy_tasks

        return Dataset.from_list(make_toy_tasks(script_args.toy_tasks, seed=seed))
    if not script_args.dataset_name:
        raise SystemExit(
            "error: --dataset_name is required with environment='kernel' (a Hub id or a local folder)"
        )
    data = load_dataset_or_exit(script_args.dataset_name, name=script_args.dataset_config)
    if script_args.dataset_train_split not in data:
        raise SystemExit(f"error: split {script_args.dataset_train_split!r} not in {list(data)}")
    train = data[script_args.dataset_train_split]
    if script_args.max_train_samples is not None:
        train = train.select(range(min(script_args.max_train_samples, len(train))))
    return train


def load_probe_dataset(script_args: TrainScriptArguments, args: MultiTurnKernelConfig):
    """The probe rows (TRL's eval set), or None; one line and exit 2 when the options cannot work together."""
    from trl_ext.script_input import fail, load_dataset_or_exit

    if script_args.probe_dataset is None:
        return None
    if script_args.probe_tasks < 1:
        fail(f"--probe_tasks must be >= 1, got {script_args.probe_tasks}")
    if args.eval_strategy == "no":
        fail("--probe_dataset is evaluated as TRL's eval set: add --eval_strategy steps --eval_steps N")
    data = load_dataset_or_exit(script_args.probe_dataset)
    if "train" not in data:
        fail(f"--probe_dataset {script_args.probe_dataset!r} has no train split (splits: {list(data)})")
    probe = data["train"]
    if len(probe) < script_args.probe_tasks:
        fail(f"--probe_dataset has {len(probe)} rows, fewer than --probe_tasks {script_args.probe_tasks}")
    return probe.select(range(script_args.probe_tasks))


def rank_reward_device(device: str | None, environ: Mapping[str, str]) -> str | None:
    """Where this rank's reward service runs: under a multi-process launch (``WORLD_SIZE`` > 1), "cuda" or None
    means this rank's own GPU (``cuda:LOCAL_RANK``), so N ranks do not each build pools on all N GPUs; an explicit
    device ("cpu", "cuda:3") is kept."""
    if int(environ.get("WORLD_SIZE", "1")) > 1 and device in (None, "cuda"):
        return f"cuda:{int(environ.get('LOCAL_RANK', '0'))}"
    return device


def reward_pool_options(args: MultiTurnKernelConfig) -> dict[str, Any]:
    """The Evaluator's pool settings the config gives (none set: the pool sizes itself from the GPU it finds)."""
    options: dict[str, Any] = {}
    if args.reward_workers is not None:
        options["workers"] = args.reward_workers
    pool_options: dict[str, Any] = {}
    if args.reward_memory_fraction is not None:
        pool_options["usable_memory_fraction"] = args.reward_memory_fraction
    if args.reward_launch_ledger is not None:
        pool_options["launch_ledger"] = args.reward_launch_ledger
    if pool_options:
        options["pool_options"] = pool_options
    return options


def make_environment(script_args: TrainScriptArguments, args: MultiTurnKernelConfig):
    if script_args.environment == "toy":
        from trl_ext.env import DigitGuessEnvironment

        return DigitGuessEnvironment()
    from kernel_reward.env import KernelEnvironment

    strict = {} if args.reward_min_coverage is None else {"min_coverage": args.reward_min_coverage}
    return KernelEnvironment(
        device=rank_reward_device(args.reward_device, os.environ),
        timeout=args.reward_timeout,
        **reward_pool_options(args),
        reward_scheme=args.reward_scheme,
        reward_params=args.reward_params(),
        shape_check=args.reward_shape_check,
        speedup_estimate=args.reward_speedup_estimate,
        stop_on_correct=args.stop_on_correct,
        share_identical=args.reward_share_identical,
        **strict,
    )


def main(script_args: TrainScriptArguments, args: MultiTurnKernelConfig, model_args: ModelConfig) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import get_peft_config

    from trl_ext.attention_backend import apply_cudnn_attention_choice
    from trl_ext.callbacks import LogHistoryWriter, NonFiniteGradientGuard, TimeBudget
    from trl_ext.script_input import pretrained_or_exit
    from trl_ext.trainer import TRLOOTrainer

    if args.use_mrs and model_args.use_peft and model_args.lora_dropout > 0:
        raise SystemExit(
            f"error: use_mrs needs identical trainer and rollout probabilities, but lora_dropout="
            f"{model_args.lora_dropout} makes them differ; set --lora_dropout 0"
        )
    train_dataset = load_train_dataset(script_args, args.seed)  # the cheap checks first
    prompts = args.generation_batch_size // args.num_generations
    if len(train_dataset) < prompts:
        from trl_ext.script_input import fail

        fail(
            f"the training set has {len(train_dataset)} rows, fewer than the {prompts} prompts one generation batch "
            f"samples (generation_batch_size {args.generation_batch_size} / num_generations {args.num_generations}): "
            "no training step could run"
        )
    probe_dataset = load_probe_dataset(script_args, args)
    apply_cudnn_attention_choice(script_args.cudnn_attention)
    tokenizer = pretrained_or_exit(
        AutoTokenizer.from_pretrained, model_args.model_name_or_path, revision=model_args.model_revision
    )
    if script_args.eos_token is not None:
        tokenizer.eos_token = script_args.eos_token
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = model_args.dtype if model_args.dtype in ("auto", None) else getattr(torch, model_args.dtype)
    model = pretrained_or_exit(
        AutoModelForCausalLM.from_pretrained,
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        dtype=dtype,
        attn_implementation=model_args.attn_implementation,
    )
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    environment = make_environment(script_args, args)
    # A NaN step is skipped, not written into the weights; log_history.json: every logged step's metrics (reward,
    # correct, hacked per turn, time split), kept current.
    callbacks = [NonFiniteGradientGuard(), LogHistoryWriter(Path(args.output_dir) / "log_history.json")]
    if script_args.max_train_seconds is not None:
        callbacks.append(TimeBudget(script_args.max_train_seconds))
    try:
        trainer = TRLOOTrainer(
            model=model,
            environment=environment,
            args=args,
            train_dataset=train_dataset,
            eval_dataset=probe_dataset,
            processing_class=tokenizer,
            peft_config=get_peft_config(model_args),
            callbacks=callbacks,
        )
        resume = args.resume_from_checkpoint
        if isinstance(resume, str) and resume.lower() in ("true", "false"):
            resume = resume.lower() == "true"
        trainer.train(resume_from_checkpoint=resume)
        trainer.save_model(args.output_dir)
        logger.info("saved the trained model to %s", args.output_dir)
    finally:
        close = getattr(environment, "close", None)
        if close is not None:
            close()


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    from trl_ext.script_input import parse_or_exit

    parser = TrlParser((TrainScriptArguments, MultiTurnKernelConfig, ModelConfig))
    main(*parse_or_exit(parser))
