"""Trainer callbacks the training scripts share: a wall-clock budget and a log written as training goes."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

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
