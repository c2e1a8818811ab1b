"""kernel_reward: a trustworthy reward for Triton kernels, run in sandboxed, pre-warmed worker processes.

    from kernel_reward import evaluate, Evaluator
    result = evaluate(reference_code, completion)          # one candidate
    with Evaluator() as ev:                                 # many, in parallel, results in input order
        results = ev.evaluate_many(pairs)

Importing this package is light: no torch, Triton, datasets or TRL at import time.
"""

from kernel_reward.api import evaluate
from kernel_reward.env import KernelEnvironment
from kernel_reward.evaluator import Evaluator
from kernel_reward.options import EvalOptions
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult, Status
from kernel_reward.service.config import ServiceConfig
from kernel_reward.trl import KernelReward
from kernel_reward.trl_environment import KernelEnv, KernelEnvironmentFactory

__all__ = [
    "EvalOptions",
    "EvalRequest",
    "EvalResult",
    "Evaluator",
    "KernelEnvironment",
    "KernelEnv",
    "KernelEnvironmentFactory",
    "KernelReward",
    "ServiceConfig",
    "Status",
    "evaluate",
]
