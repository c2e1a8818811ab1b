"""The kernel environment for multi-turn RL: dataset rows in, ``Evaluator`` verdicts and feedback turns out.

Implements the environment protocol of ``trl_ext.env`` *structurally* (kernel_reward must not import trl or
trl_ext): ``reset(tasks) -> states`` and ``step(states, completions) -> steps``, where each step carries the
attributes ``reward``, ``feedback``, ``done``, ``status``, ``formatted``, ``compiled``, ``correct``, ``hacked``,
``speedup``, ``coverage`` and ``details`` (the full ``EvalResult`` as a dict).

A step evaluates every active episode's latest completion with one batched ``Evaluator.evaluate_many`` call
(the evaluator's worker pool runs them in parallel). The feedback is the next user turn as described in background §1:
a short instruction around the evaluator's JSON result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernel_reward.options import EvalOptions
from kernel_reward.result import EvalResult, Status

FEEDBACK_TEMPLATE = (
    "You received the server's feedback on your last implementation. Improve it using this feedback and your "
    "previous answers.\n\nServer feedback (status/metrics/errors):\n{result}\n\n"
    "Return an improved Triton implementation named `ModelNew` as a single python code block. "
    "Let's think step by step."
)


@dataclass(frozen=True)
class KernelEpisode:
    """What one episode needs from its dataset row."""

    uuid: str
    reference: str
    entry_point: str


@dataclass
class KernelStep:
    """One evaluated turn (attribute names follow ``trl_ext.env.StepResult``)."""

    reward: float
    feedback: str
    status: str
    formatted: bool
    compiled: bool
    correct: bool
    hacked: bool
    speedup: float | None
    coverage: float | None
    speedup_low: float | None = None  # lower end of the speedup's 95 % interval
    scored: bool = True  # False: the service failed, not the candidate (EvalResult.scored)
    done: bool = False
    details: dict[str, Any] = field(default_factory=dict)


def feedback_turn(result: EvalResult) -> str:
    """The user message that answers a turn: instructions around the evaluator's feedback JSON."""
    return FEEDBACK_TEMPLATE.format(result=result.feedback)


def step_from_result(result: EvalResult) -> KernelStep:
    return KernelStep(
        reward=float(result.reward),
        feedback=feedback_turn(result),
        status=result.status.value,
        formatted=result.status is not Status.FORMAT_ERROR,
        compiled=result.compiled,
        correct=result.correct and not result.hacked,
        hacked=result.hacked,
        speedup=result.speedup,
        speedup_low=result.speedup_ci[0] if result.speedup is not None and result.speedup_ci else None,
        coverage=result.coverage,
        scored=result.scored,
        details={"eval_result": result.to_dict()},
    )


class KernelEnvironment:
    """Multi-turn kernel environment over a ``kernel_reward.Evaluator``.

    Args:
        evaluator: an open ``Evaluator`` to use (not closed by this class). If None, one is created with
            ``device``, ``timeout`` and ``evaluator_options`` and closed by ``close()`` / leaving the context.
        reward_scheme, reward_params: reward of every request (``kernel_reward.reward`` schemes); None keeps
            the evaluator's own setting.
        stop_on_correct: end an episode once a turn is correct (default False: every episode runs all turns,
            as in the paper).
        share_identical: a step evaluates identical completions of one task once and gives each the same
            result (``Evaluator.evaluate_many``); False evaluates every copy on its own.
    """

    def __init__(
        self,
        evaluator: Any | None = None,
        *,
        device: str | None = None,
        timeout: float | None = None,
        reward_scheme: str | None = None,
        reward_params: Mapping[str, float] | None = None,
        stop_on_correct: bool = False,
        share_identical: bool = True,
        **evaluator_options: Any,
    ):
        self.request_options: dict[str, Any] = {}
        if reward_scheme is not None:
            self.request_options["reward_scheme"] = reward_scheme
        if reward_params:
            self.request_options["reward_params"] = dict(reward_params)
        # Fail at construction, not in the middle of a rollout: EvalOptions validates scheme and parameters.
        EvalOptions.from_dict({**EvalOptions().to_dict(), **self.request_options})
        self._owned = evaluator is None
        if evaluator is None:
            from kernel_reward.evaluator import Evaluator

            evaluator = Evaluator(device=device, timeout=timeout, **evaluator_options)
        self.evaluator = evaluator
        self.stop_on_correct = stop_on_correct
        self.share_identical = share_identical

    def reset(self, tasks: Sequence[Mapping[str, Any]]) -> list[KernelEpisode]:
        episodes = []
        for index, row in enumerate(tasks):
            try:
                reference = row["reward_model"]["ground_truth"]
            except (KeyError, TypeError) as exc:
                raise ValueError(
                    f"task {index} has no reward_model.ground_truth (the reference program)"
                ) from exc
            if not isinstance(reference, str) or not reference.strip():
                raise ValueError(
                    f"task {index}: reward_model.ground_truth must be non-empty reference source"
                )
            extra = row.get("extra_info") or {}
            episodes.append(
                KernelEpisode(
                    uuid=str(extra.get("uuid", index)),
                    reference=reference,
                    entry_point=extra.get("entry_point") or "Model",
                )
            )
        return episodes

    def step(self, states: Sequence[KernelEpisode], completions: Sequence[str]) -> list[KernelStep]:
        if len(states) != len(completions):
            raise ValueError(f"step got {len(states)} states but {len(completions)} completions")
        requests = [
            self.evaluator.make_request(s.reference, text, entry_point=s.entry_point, **self.request_options)
            for s, text in zip(states, completions, strict=True)
        ]
        # asked only when sharing: an evaluator without the option (a caller's own) still serves unshared steps
        sharing = {"share_identical": True} if self.share_identical else {}
        results = self.evaluator.evaluate_many(requests, **sharing)
        steps = [step_from_result(result) for result in results]
        for step in steps:
            step.done = self.stop_on_correct and step.correct
        return steps

    def close(self) -> None:
        if self._owned:
            self.evaluator.close()

    def __enter__(self) -> KernelEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
