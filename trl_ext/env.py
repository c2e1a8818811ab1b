"""The environment protocol of multi-turn rollouts, and a toy environment for tests and learning evidence.

An environment scores one model turn at a time, batched over every active episode, and writes the feedback
that becomes the next user turn. It is a structural protocol: the reward package's ``KernelEnvironment``
implements it without importing this package, and returns its own step objects carrying the same attribute
names as ``StepResult`` (``as_step_result`` normalises and validates them).

- ``reset(tasks)`` takes dataset rows (dicts with ``prompt``, ``reward_model``, ``extra_info`` ...) and returns
  one opaque episode state per row.
- ``step(states, completions)`` takes the states of the active episodes and each one's latest completion
  (decoded text) and returns one step result per episode, in input order.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class StepResult:
    """What the environment says about one turn. Optional fields are None when they do not apply."""

    reward: float
    feedback: str
    done: bool = False  # the episode ends after this turn (no further turns are generated)
    status: str | None = None  # e.g. the reward's Status value ("correct", "compile_error", ...)
    formatted: bool | None = None  # a code block could be extracted
    compiled: bool | None = None
    correct: bool | None = None
    hacked: bool | None = None
    speedup: float | None = None
    speedup_low: float | None = None  # lower end of the speedup's 95 % interval (noise-aware Fast@p)
    coverage: float | None = None  # PR: share of device time in the candidate's own kernels
    # False when the environment's service, not the answer, failed (kernel_reward's unscored results): the reward
    # says nothing about the answer, and the trainer keeps the whole trajectory out of its baselines and loss
    scored: bool = True
    details: dict[str, Any] = field(default_factory=dict)  # JSON-able extras (e.g. the full EvalResult)


@runtime_checkable
class Environment(Protocol):
    """Batched multi-turn environment (see the module docstring)."""

    def reset(self, tasks: Sequence[Mapping[str, Any]]) -> list[Any]: ...

    def step(self, states: Sequence[Any], completions: Sequence[str]) -> list[Any]: ...


_STEP_FIELDS = (
    "done",
    "status",
    "formatted",
    "compiled",
    "correct",
    "hacked",
    "speedup",
    "speedup_low",
    "coverage",
    "scored",
)


def as_step_result(obj: Any) -> StepResult:
    """Normalise a step object from any environment into a ``StepResult``, rejecting unusable ones."""
    if isinstance(obj, StepResult):
        result = obj
    else:
        missing = [name for name in ("reward", "feedback") if not hasattr(obj, name)]
        if missing:
            raise TypeError(f"environment step result {type(obj).__name__} lacks attribute(s) {missing}")
        values = {name: getattr(obj, name) for name in _STEP_FIELDS if hasattr(obj, name)}
        details = getattr(obj, "details", None) or {}
        result = StepResult(reward=obj.reward, feedback=obj.feedback, details=dict(details), **values)
    if result.reward is None or not math.isfinite(float(result.reward)):
        raise ValueError(
            f"environment returned reward {result.reward!r}; rewards must be finite floats "
            "(score failures explicitly, e.g. 0.0 for a compile error)"
        )
    if not isinstance(result.feedback, str):
        raise TypeError(f"environment feedback must be str, got {type(result.feedback).__name__}")
    result.reward = float(result.reward)
    return result


# --------------------------------------------------------------------------------------------------------------
# Toy environment: guess a secret digit; the feedback of a wrong turn reveals it.
# --------------------------------------------------------------------------------------------------------------

TOY_PROMPT = "Guess the secret digit."


def make_toy_tasks(num_tasks: int, seed: int = 0, num_choices: int = 10) -> list[dict[str, Any]]:
    """Dataset-shaped rows for ``DigitGuessEnvironment`` (same top-level keys as the kernel dataset).

    Secrets are drawn from the digits ``0 .. num_choices - 1``.
    """
    if not 1 <= num_choices <= 10:
        raise ValueError(f"num_choices must be in 1..10, got {num_choices}")
    rng = random.Random(seed)
    rows = []
    for i in range(num_tasks):
        secret = str(rng.randrange(num_choices))
        rows.append(
            {
                "data_source": "toy_digit_guess",
                "prompt": [{"role": "user", "content": TOY_PROMPT}],
                "ability": "toy",
                "reward_model": {"style": "rule", "ground_truth": secret},
                "extra_info": {"uuid": f"toy_{i}"},
            }
        )
    return rows


class DigitGuessEnvironment:
    """A multi-turn toy whose feedback carries information the model can use.

    Each task hides a digit (``reward_model.ground_truth``). A turn earns ``hit_reward`` if the first digit of
    the completion is the secret, ``digit_reward`` if the completion holds some other digit, 0 otherwise.
    Every turn's feedback reveals the secret as its last word, so a policy can learn to copy it at turn 2+:
    all prompts are identical, so turn-1 reward is capped at chance while later turns can reach ``hit_reward``.

    With ``reward_from_turn=2`` turn 1 is unscored (reward 0 whatever the answer): only answers given after the
    feedback earn reward, which isolates the use of feedback.
    """

    def __init__(
        self,
        hit_reward: float = 1.0,
        digit_reward: float = 0.2,
        stop_on_success: bool = False,
        reward_from_turn: int = 1,
        feedback_repeats: int = 1,
    ):
        if feedback_repeats < 1:
            raise ValueError(f"feedback_repeats must be >= 1, got {feedback_repeats}")
        if reward_from_turn < 1:
            raise ValueError(f"reward_from_turn must be >= 1, got {reward_from_turn}")
        self.hit_reward = hit_reward
        self.digit_reward = digit_reward
        self.stop_on_success = stop_on_success
        self.reward_from_turn = reward_from_turn
        self.feedback_repeats = feedback_repeats

    def reset(self, tasks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        secrets = []
        for row in tasks:
            secret = str(row["reward_model"]["ground_truth"]).strip()
            if not re.fullmatch(r"\d", secret):
                raise ValueError(
                    f"toy task {row.get('extra_info', {}).get('uuid')} has non-digit secret {secret!r}"
                )
            secrets.append({"secret": secret, "turn": 0})
        return secrets

    def step(self, states: Sequence[dict[str, Any]], completions: Sequence[str]) -> list[StepResult]:
        if len(states) != len(completions):
            raise ValueError(f"step got {len(states)} states but {len(completions)} completions")
        results = []
        for state, completion in zip(states, completions, strict=True):
            state["turn"] += 1
            secret = state["secret"]
            digits = re.findall(r"\d", completion)
            hit = bool(digits) and digits[0] == secret
            reward = self.hit_reward if hit else (self.digit_reward if digits else 0.0)
            if state["turn"] < self.reward_from_turn:
                reward = 0.0
            feedback = f"{'Correct' if hit else 'Wrong'}. The secret digit is " + " ".join(
                [secret] * self.feedback_repeats
            )
            results.append(
                StepResult(
                    reward=reward,
                    feedback=feedback,
                    done=hit and self.stop_on_success,
                    status="correct" if hit else ("incorrect" if digits else "format_error"),
                    formatted=bool(digits),
                    compiled=bool(digits),
                    correct=hit,
                    hacked=False,
                )
            )
        return results
