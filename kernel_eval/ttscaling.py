"""Sequential test-time scaling (DR.Kernel, background §5): the full history lives outside the context.

Each refinement round the model sees the first-turn prompt followed by only the best ``window`` earlier turns
(by reward; default 4), each as its assistant completion and the feedback user message that followed it, in
the order they happened. The whole history is kept (and scored) outside the context, so a long refinement
run costs a bounded prompt length. The functions here are pure; ``harness.run_tts`` drives the rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_WINDOW = 4


@dataclass(frozen=True)
class HistoryTurn:
    """One finished turn of a trajectory, as test-time scaling sees it."""

    turn: int  # 1-based position in the full history
    completion: str
    feedback: str  # the user message (environment feedback) that answered this completion
    reward: float


def select_context(history: Sequence[HistoryTurn], window: int = DEFAULT_WINDOW) -> list[HistoryTurn]:
    """The ``window`` best turns by reward, returned in chronological order.

    Ties in reward go to the more recent turn (it was written with more feedback in view).
    """
    if window < 1:
        raise ValueError(f"select_context: window must be >= 1, got {window}")
    turns = [h.turn for h in history]
    if len(set(turns)) != len(turns):
        raise ValueError(f"select_context: duplicate turn numbers in history: {turns}")
    best = sorted(history, key=lambda h: (h.reward, h.turn), reverse=True)[:window]
    return sorted(best, key=lambda h: h.turn)


def context_messages(
    first_prompt: Sequence[dict[str, Any]], history: Sequence[HistoryTurn], window: int = DEFAULT_WINDOW
) -> list[dict[str, str]]:
    """The chat for the next round: the first prompt, then (completion, feedback) of the selected turns."""
    if not first_prompt:
        raise ValueError("context_messages: the first-turn prompt is empty")
    messages = [{"role": m["role"], "content": m["content"]} for m in first_prompt]
    for turn in select_context(history, window):
        messages.append({"role": "assistant", "content": turn.completion})
        messages.append({"role": "user", "content": turn.feedback})
    return messages
