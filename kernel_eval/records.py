"""What an evaluation run records: one ``EvaluatedTurn`` per evaluated turn, one ``SampleRecord`` per sample (its
turns in order). The harness fills them, the report and the cache read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernel_reward.result import EvalResult

from .metrics import Outcome
from .tasks import EvalTask

Messages = list[dict[str, str]]


@dataclass
class EvaluatedTurn:
    """One evaluated turn: what the model saw, what it wrote, what was extracted, and the verdict."""

    uuid: str
    sample: int
    turn: int  # 1-based
    prompt: Messages  # the chat the model answered
    completion: str
    code: str | None  # the extracted code (None: format error)
    result: EvalResult
    cached: bool = False  # loaded from the resume cache rather than computed in this run
    phase: str = "multi_turn"  # "multi_turn" or "tts" (test-time scaling round)

    @property
    def outcome(self) -> Outcome:
        return Outcome.from_result(self.result)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "sample": self.sample,
            "turn": self.turn,
            "phase": self.phase,
            "cached": self.cached,
            "prompt": self.prompt,
            "completion": self.completion,
            "code": self.code,
            "result": self.result.to_dict(),
        }


@dataclass
class SampleRecord:
    """All turns of one sample (trajectory) of one task."""

    task: EvalTask
    sample: int
    turns: list[EvaluatedTurn] = field(default_factory=list)

    @property
    def outcomes(self) -> list[Outcome]:
        return [t.outcome for t in self.turns]
