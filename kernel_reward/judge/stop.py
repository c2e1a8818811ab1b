"""``JudgeStop``: the one early exit of a verdict. Whatever check decides the candidate's status before the end
raises it with that status; the pipeline turns it into the result."""

from __future__ import annotations

from kernel_reward.result import Status


class JudgeStop(Exception):
    """Ends the evaluation early with a status (and optional hack reasons / flags) set on the result.
    ``scored=False``: the evaluator, not the candidate, stopped it; the result says nothing about the candidate."""

    def __init__(
        self,
        status: Status,
        error: str,
        hack_reasons: list[str] | None = None,
        flag: str | None = None,
        *,
        scored: bool = True,
    ) -> None:
        super().__init__(error)
        self.status = status
        self.hack_reasons = hack_reasons or []
        self.flag = flag
        self.scored = scored
