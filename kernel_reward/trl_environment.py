"""The kernel judge as a TRL environment: ``GRPOTrainer(environment_factory=KernelEnvironmentFactory(...))``.

TRL 1.16 runs one environment instance per rollout: ``reset(**row)`` with the dataset row's columns, the
instance's public methods offered to the model as tools, and ``get_reward()`` once the rollout ends. Here the one
tool is ``evaluate_kernel(code)``: the model submits a complete ``ModelNew`` module, the judge compiles, checks
and times it (the same sandboxed service as ``KernelReward``), and the tool's answer is the judge's feedback, so
the model can refine its kernel within one rollout. The rollout's reward is its last submission's (or its best,
``reward="best"``); a rollout that submitted nothing gets the reward of a ``format_error``; one whose evaluation
the service could not score returns None, which TRL leaves out of the loss.

Every instance of one factory shares one ``Evaluator``, started on first use; ``factory.close()`` stops it.
``KernelEnv`` drives the same judge through an OpenEnv-style ``reset`` / ``step`` / ``state`` for loops that step
an environment themselves (TRL's ``rollout_func``, agent harnesses) instead of through tool calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kernel_reward.options import EvalOptions
from kernel_reward.result import EvalResult, Status
from kernel_reward.reward import compute_reward
from kernel_reward.trl import KernelReward, unscored

REWARD_CHOICES = ("last", "best")


class KernelEnvironmentFactory:
    """Makes ``KernelToolEnvironment`` instances that share one evaluator (TRL calls it with no arguments).

    Args:
        device, timeout, backend, evaluator_kwargs: as for ``KernelReward`` (the ``Evaluator`` they start).
        reward: "last" (the last submission's reward) or "best" (the highest of the rollout's submissions).
        max_submissions: evaluations one rollout may ask for; later calls are answered without evaluating.
        **options: ``EvalOptions`` fields for every request (reward scheme, shape check, ...).
    """

    def __init__(
        self,
        *,
        device: str | None = None,
        timeout: float | None = None,
        backend: str = "local",
        evaluator_kwargs: Mapping[str, Any] | None = None,
        reward: str = "last",
        max_submissions: int = 4,
        **options: Any,
    ) -> None:
        if reward not in REWARD_CHOICES:
            raise ValueError(f"reward must be one of {REWARD_CHOICES}, got {reward!r}")
        if max_submissions < 1:
            raise ValueError(f"max_submissions must be >= 1, got {max_submissions!r}")
        # fails here, not in the middle of a rollout
        self.options = EvalOptions.from_dict({**EvalOptions().to_dict(), **options})
        self.request_options = dict(options)
        self.reward = reward
        self.max_submissions = max_submissions
        # KernelReward owns the shared evaluator: started on first use, stopped by close()
        self._service = KernelReward(
            device=device, timeout=timeout, backend=backend, evaluator_kwargs=dict(evaluator_kwargs or {})
        )

    @property
    def evaluator(self) -> Any:
        return self._service.evaluator

    def no_submission_reward(self) -> float:
        """What a rollout that never called the tool earns: the reward of a ``format_error`` (no code)."""
        return compute_reward(
            self.options.reward_scheme,
            status=Status.FORMAT_ERROR.value,
            speedup=None,
            coverage=None,
            hacked=False,
            hacked_penalty=self.options.hacked_penalty,
            params=self.options.reward_params,
        ).reward

    def __call__(self) -> KernelToolEnvironment:
        return KernelToolEnvironment(self)

    def close(self) -> None:
        self._service.close()


class KernelToolEnvironment:
    """One rollout's task (see the module docstring). Built by ``KernelEnvironmentFactory``."""

    def __init__(self, factory: KernelEnvironmentFactory) -> None:
        self._factory = factory
        self._reference: str | None = None
        self._entry_point = "Model"
        self.results: list[EvalResult] = []

    def reset(self, reward_model: Mapping[str, Any] | None = None, extra_info: Any = None, **_: Any) -> None:
        """Take the row's reference program (``reward_model["ground_truth"]``); the prompt is left as it is."""
        reference = (reward_model or {}).get("ground_truth")
        if not isinstance(reference, str) or not reference.strip():
            raise ValueError(
                "KernelToolEnvironment.reset: the row has no reference program in reward_model['ground_truth']"
            )
        self._reference = reference
        self._entry_point = (extra_info or {}).get("entry_point") or "Model"
        self.results = []

    def evaluate_kernel(self, code: str) -> str:
        """Run a Triton implementation of the task on the judge: it is compiled, checked against the reference on
        fresh inputs and timed. Returns the judge's verdict and feedback.

        Args:
            code: The complete Python module: imports, the @triton.jit kernels, and class ModelNew (an nn.Module
                whose forward takes the same inputs as the reference's Model).
        """
        if self._reference is None:
            raise RuntimeError("evaluate_kernel before reset: the environment has no task")
        if len(self.results) >= self._factory.max_submissions:
            return (
                f"Submission limit reached ({self._factory.max_submissions} per task): this one was not evaluated. "
                "Give your final answer."
            )
        completion = code if "```" in code else f"```python\n{code}\n```"
        result = self._factory.evaluator.evaluate(
            self._reference,
            completion,
            entry_point=self._entry_point,
            **self._factory.request_options,
        )
        self.results.append(result)
        return result.feedback

    def get_reward(self) -> float | None:
        """The rollout's reward: see the module docstring."""
        if not self.results:
            return self._factory.no_submission_reward()
        chosen = self.results[-1]
        if self._factory.reward == "best":
            scored = [result for result in self.results if not unscored(result)]
            chosen = max(scored, key=lambda result: result.reward) if scored else chosen
        return None if unscored(chosen) else float(chosen.reward)


@dataclass(frozen=True)
class KernelObservation:
    """What ``KernelEnv`` returns, in OpenEnv's shape: the text the model reads next (the task's prompt after
    ``reset``, the judge's feedback after ``step``), the step's reward (None after ``reset``, or when the service
    could not score it), whether the episode is over, and the judge's full result."""

    text: str
    reward: float | None
    done: bool
    result: EvalResult | None = None


class KernelEnv:
    """One task at a time, OpenEnv-style: ``reset(row)``, then ``step(code)`` per submission until ``done`` (a
    correct kernel, or the factory's ``max_submissions`` used). ``get_reward()`` is the episode's reward as
    ``KernelToolEnvironment`` computes it (last or best submission). Kept apart from ``KernelToolEnvironment``:
    TRL offers every public method of an environment to the model as a tool."""

    def __init__(self, factory: KernelEnvironmentFactory) -> None:
        self._factory = factory
        self._episode = factory()
        self._done = False

    def reset(self, row: Mapping[str, Any]) -> KernelObservation:
        """Start the task of a dataset row (``reward_model["ground_truth"]``: the reference); the observation is
        the row's last user message."""
        self._episode.reset(**row)
        self._done = False
        messages = row.get("prompt") or []
        users = [m.get("content", "") for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
        return KernelObservation(text=users[-1] if users else "", reward=None, done=False)

    def step(self, code: str) -> KernelObservation:
        """Judge one submission (a complete module defining ``ModelNew``, fenced or not)."""
        if self._done:
            raise RuntimeError("KernelEnv.step after the episode ended: call reset first")
        feedback = self._episode.evaluate_kernel(code)
        result = self._episode.results[-1]
        self._done = (
            result.status == Status.CORRECT or len(self._episode.results) >= self._factory.max_submissions
        )
        reward = None if unscored(result) else float(result.reward)
        return KernelObservation(text=feedback, reward=reward, done=self._done, result=result)

    def get_reward(self) -> float | None:
        return self._episode.get_reward()

    @property
    def state(self) -> dict[str, Any]:
        """Submissions so far (their statuses), whether the episode is over, and the episode's reward so far."""
        return {
            "submissions": len(self._episode.results),
            "statuses": [result.status.value for result in self._episode.results],
            "done": self._done,
            "reward": self.get_reward() if self._episode.results else None,
        }
