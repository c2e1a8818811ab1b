"""The multi-turn rollout loop, shared by the trainer and the evaluation harness.

One call runs every task of a batch for up to ``max_turns`` turns:

    turn 1: chat-template the dataset prompt -> generate -> environment.step (batched over active episodes)
    turn k: append the feedback of turn k-1 as a user message, *as token ids* (earlier turns are never
            re-tokenised, so the trainer scores exactly the tokens that were sampled) -> generate -> step

Generation is pluggable (``GenerationBackend``: ``trl_ext.generation.TransformersBackend``; the trainer wires
TRL's vLLM client through the same protocol; an OpenAI-compatible endpoint can implement it too) and so is the environment
(``trl_ext.env.Environment``). The result is one ``Trajectory`` per task: the prompt ids, the completion ids of
all turns with the feedback in between, a mask of model tokens (feedback tokens carry no loss), the rollout
engine's log-probs, the turn of every token, and each turn's text and ``StepResult``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from trl_ext.env import Environment, StepResult, as_step_result
from trl_ext.generation import GenerationBackend, GenerationOutput

logger = logging.getLogger(__name__)

FEEDBACK_TOKEN = -1  # turn id of feedback / template tokens between turns


# ------------------------------------------------------------------------------------------------ chat tokens
def _as_ids(encoded: Any) -> list[int]:
    """apply_chat_template returns a list, or a BatchEncoding in newer transformers; give a flat id list."""
    if isinstance(encoded, Mapping):
        encoded = encoded["input_ids"]
    if isinstance(encoded, torch.Tensor):
        encoded = encoded.tolist()
    if encoded and isinstance(encoded[0], list):
        encoded = encoded[0]
    return list(encoded)


def render_prompt_ids(
    tokenizer: Any,
    messages: Sequence[Mapping[str, str]],
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> list[int]:
    """Token ids of a chat prompt followed by the assistant generation header.

    ``chat_template_kwargs`` go to ``apply_chat_template`` (e.g. ``{"enable_thinking": False}`` for Qwen3).
    """
    if not messages or any("role" not in m or "content" not in m for m in messages):
        raise ValueError(
            f"a prompt must be a non-empty list of {{role, content}} messages, got {messages!r:.200}"
        )
    encoded = tokenizer.apply_chat_template(
        list(messages), add_generation_prompt=True, tokenize=True, **dict(chat_template_kwargs or {})
    )
    return _as_ids(encoded)


class FeedbackTokenizer:
    """Turns feedback text into the token ids that follow a finished assistant turn.

    The ids are the tail of the chat template's rendering of [user, assistant, user(feedback)] + generation
    header that starts right after the assistant's end-of-turn token (which the model generated itself): the
    cut sits after as many end-of-turn tokens as [user, assistant] alone renders. Earlier turns are never
    re-tokenised, so templates that render a finished assistant turn differently once a user turn follows
    (Qwen3 drops the empty ``<think></think>`` block of history turns) work too. ``chat_template_kwargs`` go to
    ``apply_chat_template``, so the generation header matches the first turn's (e.g. Qwen3's
    ``enable_thinking=False``).
    """

    def __init__(
        self, tokenizer: Any, end_of_turn_id: int, chat_template_kwargs: Mapping[str, Any] | None = None
    ):
        self.tokenizer = tokenizer
        self.end_of_turn_id = end_of_turn_id
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._base = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
        base_ids = _as_ids(
            tokenizer.apply_chat_template(self._base, tokenize=True, **self.chat_template_kwargs)
        )
        if end_of_turn_id not in base_ids:
            raise ValueError(
                f"the chat template does not end assistant turns with token {end_of_turn_id} "
                f"({tokenizer.convert_ids_to_tokens(end_of_turn_id)!r}); set the eos token to the template's "
                "end-of-turn token (e.g. <|im_end|>)"
            )
        # End-of-turn tokens up to and including the assistant's in the dummy conversation.
        self._turn_ends = base_ids.count(end_of_turn_id)

    def __call__(self, feedback: str) -> list[int]:
        full = _as_ids(
            self.tokenizer.apply_chat_template(
                [*self._base, {"role": "user", "content": feedback}],
                add_generation_prompt=True,
                tokenize=True,
                **self.chat_template_kwargs,
            )
        )
        ends = [pos for pos, tok in enumerate(full) if tok == self.end_of_turn_id]
        if len(ends) <= self._turn_ends:  # the feedback turn must close with its own end-of-turn token
            raise ValueError("the chat template does not close the feedback turn with the end-of-turn token")
        return full[ends[self._turn_ends - 1] + 1 :]


# ------------------------------------------------------------------------------------------------ the loop
@dataclass
class TurnRecord:
    """One model turn: its sampled ids, decoded text, and the environment's verdict."""

    completion_ids: list[int]
    completion: str
    result: StepResult
    truncated: bool  # the turn hit max_new_tokens without an end-of-turn token


@dataclass
class Trajectory:
    """All turns of one episode, flattened the way the trainer scores them."""

    task: Mapping[str, Any]
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)  # turns + feedback between them
    env_mask: list[int] = field(default_factory=list)  # 1 = sampled by the model, 0 = feedback / template
    logprobs: list[float] = field(default_factory=list)  # rollout log-probs (0.0 on feedback tokens)
    turn_ids: list[int] = field(default_factory=list)  # 0-based turn of each model token, -1 on feedback
    turns: list[TurnRecord] = field(default_factory=list)
    done: bool = False

    @property
    def rewards(self) -> list[float]:
        return [turn.result.reward for turn in self.turns]


@dataclass
class RolloutStats:
    generation_s: float = 0.0
    environment_s: float = 0.0
    generation_calls: int = 0
    feedback_truncated: int = 0


class MultiTurnRollout:
    """Runs batches of episodes against an environment (see the module docstring).

    Args:
        backend: generation backend.
        environment: the environment (``trl_ext.env.Environment``).
        tokenizer: a tokenizer with a chat template.
        max_turns: turns per episode (fewer if the environment says ``done``).
        end_of_turn_id: the token that ends an assistant turn (the generation eos).
        feedback_max_chars: feedback longer than this is cut (head kept, a marker appended).
        max_context_tokens: an episode stops once its context would exceed this many tokens (None: no limit).
        count_active_globally: in distributed runs, maps this rank's number of active episodes to the number
            across all ranks, so ranks keep making the same number of generation calls.
        chat_template_kwargs: extra ``apply_chat_template`` arguments for the prompt and the feedback turns.
    """

    def __init__(
        self,
        backend: GenerationBackend,
        environment: Environment,
        tokenizer: Any,
        max_turns: int,
        end_of_turn_id: int,
        feedback_max_chars: int = 8000,
        max_context_tokens: int | None = None,
        count_active_globally: Callable[[int], int] | None = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
    ):
        if max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {max_turns}")
        self.backend = backend
        self.environment = environment
        self.tokenizer = tokenizer
        self.max_turns = max_turns
        self.end_of_turn_id = end_of_turn_id
        self.feedback_max_chars = feedback_max_chars
        self.max_context_tokens = max_context_tokens
        self.count_active_globally = count_active_globally
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.feedback_ids = FeedbackTokenizer(tokenizer, end_of_turn_id, self.chat_template_kwargs)
        self.stats = RolloutStats()

    def _clip_feedback(self, text: str) -> str:
        if len(text) <= self.feedback_max_chars:
            return text
        self.stats.feedback_truncated += 1
        marker = f"\n... [feedback truncated: {len(text) - self.feedback_max_chars} characters omitted]"
        return text[: self.feedback_max_chars] + marker

    def run(
        self, tasks: Sequence[Mapping[str, Any]], prompt_ids: Sequence[list[int]] | None = None
    ) -> list[Trajectory]:
        """Run one episode per task. ``prompt_ids`` (optional) overrides the chat-templated ``task["prompt"]``."""
        self.stats = RolloutStats()
        if prompt_ids is None:
            prompt_ids = [
                render_prompt_ids(self.tokenizer, task["prompt"], self.chat_template_kwargs) for task in tasks
            ]
        trajectories = [
            Trajectory(task=task, prompt_ids=list(ids)) for task, ids in zip(tasks, prompt_ids, strict=True)
        ]
        states = self.environment.reset(tasks)
        if len(states) != len(tasks):
            raise ValueError(f"environment.reset returned {len(states)} states for {len(tasks)} tasks")

        for turn in range(self.max_turns):
            active = [i for i, traj in enumerate(trajectories) if not traj.done]
            if self.count_active_globally is not None:
                if self.count_active_globally(len(active)) == 0:
                    break
            elif not active:
                break
            contexts = [trajectories[i].prompt_ids + trajectories[i].completion_ids for i in active]
            started = time.perf_counter()
            generated = self.backend.generate(contexts)
            self.stats.generation_s += time.perf_counter() - started
            self.stats.generation_calls += 1
            if len(generated) != len(active):
                raise RuntimeError(
                    f"generation backend returned {len(generated)} outputs for {len(active)} prompts"
                )
            if not active:
                continue  # this rank only kept step with the others
            texts = [self.tokenizer.decode(g.token_ids, skip_special_tokens=True) for g in generated]
            started = time.perf_counter()
            raw = self.environment.step([states[i] for i in active], texts)
            self.stats.environment_s += time.perf_counter() - started
            if len(raw) != len(active):
                raise RuntimeError(
                    f"environment.step returned {len(raw)} results for {len(active)} completions"
                )
            for i, gen, text, step in zip(active, generated, texts, raw, strict=True):
                self._append_turn(trajectories[i], turn, gen, text, as_step_result(step))
        return trajectories

    def _append_turn(
        self, traj: Trajectory, turn: int, gen: GenerationOutput, text: str, result: StepResult
    ) -> None:
        ids = list(gen.token_ids)
        logps = list(gen.logprobs) if gen.logprobs is not None else [float("nan")] * len(ids)
        if len(logps) != len(ids):
            raise RuntimeError(f"backend gave {len(logps)} log-probs for {len(ids)} tokens")
        truncated = not ids or ids[-1] != self.end_of_turn_id
        traj.completion_ids += ids
        traj.env_mask += [1] * len(ids)
        traj.logprobs += logps
        traj.turn_ids += [turn] * len(ids)
        traj.turns.append(TurnRecord(ids, text, result, truncated))
        if result.done or turn + 1 >= self.max_turns:
            traj.done = True
            return
        # Close a truncated turn ourselves (not a model token: no loss), then the feedback turn.
        between = ([self.end_of_turn_id] if truncated else []) + self.feedback_ids(
            self._clip_feedback(result.feedback)
        )
        if self.max_context_tokens is not None:
            if len(traj.prompt_ids) + len(traj.completion_ids) + len(between) >= self.max_context_tokens:
                traj.done = True
                return
        traj.completion_ids += between
        traj.env_mask += [0] * len(between)
        traj.logprobs += [0.0] * len(between)
        traj.turn_ids += [FEEDBACK_TOKEN] * len(between)
