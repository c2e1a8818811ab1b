"""Trainer callbacks the training scripts share: a wall-clock budget, a log written as training goes, and a guard
that keeps a non-finite gradient out of the weights."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import torch
from transformers import TrainerCallback

logger = logging.getLogger(__name__)


class TimeBudget(TrainerCallback):
    """End training after the first optimizer step that finishes past ``budget_s`` seconds of training.

    For runs that must fit a fixed slot (a GPU lease, a CI job): the step in progress completes, the trainer then
    saves as at a normal end, and the log says how many steps ran.
    """

    def __init__(self, budget_s: float) -> None:
        if budget_s <= 0:
            raise ValueError(f"budget_s must be > 0, got {budget_s}")
        self.budget_s = budget_s
        self.started = time.perf_counter()

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if time.perf_counter() - self.started > self.budget_s:
            logger.warning(
                "time budget of %.0f s spent after step %d: stopping", self.budget_s, state.global_step
            )
            control.should_training_stop = True


class LogHistoryWriter(TrainerCallback):
    """Rewrite ``path`` with the trainer's log history (one entry per logging step) after every log, so a run
    that is cut short still leaves its curves. Written to a sibling file and renamed: never half a file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".partial")
        tmp.write_text(json.dumps(state.log_history, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.path)


class NonFiniteGradientGuard(TrainerCallback):
    """Skip an optimizer step whose gradient holds a NaN or an infinity, and stop after ``max_in_a_row`` of them.

    Clipping spreads one non-finite element to every gradient (the clip coefficient is NaN) and the optimizer then
    writes NaN into every weight: all later steps log a NaN gradient norm, the trainer's NaN filter shows their
    loss as 0, and the saved model samples nothing. Here such a step's gradients are dropped before the optimizer
    runs (torch's optimizers leave a parameter without a gradient untouched), so the weights and the optimizer's
    state stay as they were. Each log entry carries ``nonfinite_grad_steps`` (skipped so far); a run in which
    ``max_in_a_row`` consecutive steps are non-finite stops with an error naming them instead of training on.
    """

    def __init__(self, max_in_a_row: int = 3) -> None:
        if max_in_a_row < 1:
            raise ValueError(f"max_in_a_row must be >= 1, got {max_in_a_row}")
        self.max_in_a_row = max_in_a_row
        self.skipped_steps: list[int] = []  # the optimizer steps (1-based, as the trainer logs them) dropped
        self._in_a_row = 0

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        if not grads or bool(torch.stack([torch.isfinite(g).all().to(grads[0].device) for g in grads]).all()):
            self._in_a_row = 0
            return
        step = state.global_step + 1
        self.skipped_steps.append(step)
        self._in_a_row += 1
        for param in model.parameters():
            param.grad = None
        logger.warning(
            "optimizer step %d: non-finite gradient, step skipped (%d so far)", step, len(self.skipped_steps)
        )
        if self._in_a_row >= self.max_in_a_row:
            raise RuntimeError(
                f"{self._in_a_row} optimizer steps in a row had a non-finite gradient (steps "
                f"{self.skipped_steps[-self._in_a_row :]}): the model or the data is broken, training stopped"
            )

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is None:
            return
        logs["nonfinite_grad_steps"] = len(self.skipped_steps)
        if state.log_history and state.log_history[-1].get("step") == state.global_step:
            state.log_history[-1]["nonfinite_grad_steps"] = len(self.skipped_steps)
