"""trl_ext: multi-turn TRLOO / MRS / PRS training on TRL (DR.Kernel's algorithms as GRPOTrainer subclasses).

Pure math lives in ``advantages`` and ``mrs``; the environment protocol and a toy environment in ``env``; the
multi-turn loop shared with evaluation in ``rollout``; the config and trainer in ``config`` / ``trainer``.
The trainer classes are imported lazily so that the math can be used without importing TRL.
"""

from trl_ext.advantages import (
    grpo_turn_advantages,
    keep_failed_turns_after_success,
    per_token,
    permute_within_groups,
    trloo_advantages,
    turn_returns,
    untied_groups,
)
from trl_ext.env import DigitGuessEnvironment, Environment, StepResult, as_step_result, make_toy_tasks
from trl_ext.mrs import (
    mean_abs_log_ratio,
    mrs_keep,
    mrs_keep_tokens,
    mrs_keep_turns,
    prs_keep_probability,
    prs_sample,
)

__all__ = [
    "DigitGuessEnvironment",
    "Environment",
    "GenerationBackend",
    "GenerationOutput",
    "MultiTurnKernelConfig",
    "MultiTurnRollout",
    "StepResult",
    "TRLOOTrainer",
    "Trajectory",
    "TransformersBackend",
    "as_step_result",
    "grpo_turn_advantages",
    "permute_within_groups",
    "keep_failed_turns_after_success",
    "make_toy_tasks",
    "mean_abs_log_ratio",
    "mrs_keep",
    "mrs_keep_tokens",
    "mrs_keep_turns",
    "per_token",
    "prs_keep_probability",
    "prs_sample",
    "trloo_advantages",
    "turn_returns",
    "untied_groups",
]

_LAZY = {
    "MultiTurnKernelConfig": "trl_ext.config",
    "TRLOOTrainer": "trl_ext.trainer",
    "MultiTurnRollout": "trl_ext.rollout",
    "Trajectory": "trl_ext.rollout",
    "TransformersBackend": "trl_ext.generation",
    "GenerationBackend": "trl_ext.generation",
    "GenerationOutput": "trl_ext.generation",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'trl_ext' has no attribute {name!r}")
