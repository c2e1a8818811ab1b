"""trl_ext.callbacks: the wall-clock budget, the log written as training goes and the non-finite gradient guard,
in a real Trainer run."""

import json
import math

import pytest
import torch

pytest.importorskip("transformers")

from transformers import Trainer, TrainerCallback, TrainingArguments  # noqa: E402

from trl_ext.callbacks import LogHistoryWriter, NonFiniteGradientGuard, TimeBudget  # noqa: E402


class _Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
        self.poisoned = False  # a NaN loss, as a bf16 overflow or a broken batch gives

    def forward(self, x, labels=None):
        out = self.layer(x).squeeze(-1)
        loss = torch.nn.functional.mse_loss(out, labels)
        return {"loss": loss * math.nan if self.poisoned else loss, "logits": out}


class _Poison(TrainerCallback):
    """Poison the loss of the given optimizer steps (1-based) and keep the weights seen after every step."""

    def __init__(self, steps):
        self.steps = set(steps)
        self.weights_after = {}

    def on_step_begin(self, args, state, control, model=None, **kwargs):
        model.poisoned = state.global_step + 1 in self.steps

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.weights_after[state.global_step] = model.layer.weight.detach().clone()


def _data(n=64):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    return [{"x": row, "labels": row.sum()} for row in x]


def _trainer(tmp_path, callbacks, max_steps=20, **extra):
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        **extra,
    )
    return Trainer(model=_Linear(), args=args, train_dataset=_data(), callbacks=callbacks)


def test_a_spent_budget_stops_after_the_first_step_and_the_log_is_on_disk(tmp_path):
    log = tmp_path / "out" / "log_history.json"
    trainer = _trainer(tmp_path, [TimeBudget(1e-9), LogHistoryWriter(log)])
    trainer.train()
    assert trainer.state.global_step == 1
    entries = json.loads(log.read_text())
    assert entries[0]["step"] == 1 and "loss" in entries[0]
    assert not list(log.parent.glob("*.partial"))


def test_an_unspent_budget_lets_training_finish(tmp_path):
    trainer = _trainer(tmp_path, [TimeBudget(3600)], max_steps=5)
    trainer.train()
    assert trainer.state.global_step == 5


def test_a_budget_must_be_positive():
    with pytest.raises(ValueError, match="budget_s must be > 0"):
        TimeBudget(0)


def test_without_the_guard_one_nan_step_ruins_every_weight(tmp_path):
    poison = _Poison({3})
    _trainer(tmp_path, [poison], max_steps=6).train()
    assert torch.isfinite(poison.weights_after[2]).all()
    assert torch.isnan(poison.weights_after[6]).all()


def test_the_guard_skips_a_nan_step_and_keeps_training(tmp_path):
    poison, guard = _Poison({3}), NonFiniteGradientGuard()
    log = tmp_path / "out" / "log_history.json"
    trainer = _trainer(tmp_path, [poison, guard, LogHistoryWriter(log)], max_steps=6)
    trainer.train()
    assert guard.skipped_steps == [3]
    assert torch.equal(poison.weights_after[3], poison.weights_after[2])  # the step left the weights alone
    assert not torch.equal(poison.weights_after[4], poison.weights_after[3])  # the next one trained
    assert torch.isfinite(trainer.model.layer.weight).all()
    counts = {
        row["step"]: row["nonfinite_grad_steps"] for row in json.loads(log.read_text()) if "loss" in row
    }
    assert counts == {1: 0, 2: 0, 3: 1, 4: 1, 5: 1, 6: 1}


def test_the_guard_skips_with_gradient_accumulation(tmp_path):
    poison, guard = _Poison({2}), NonFiniteGradientGuard()
    trainer = _trainer(tmp_path, [poison, guard], max_steps=4, gradient_accumulation_steps=2)
    trainer.train()
    assert guard.skipped_steps == [2]
    assert torch.isfinite(trainer.model.layer.weight).all()


def test_the_guard_stops_a_run_whose_steps_stay_non_finite(tmp_path):
    guard = NonFiniteGradientGuard(max_in_a_row=3)
    trainer = _trainer(tmp_path, [_Poison({1, 3, 4, 5, 6}), guard], max_steps=8)
    with pytest.raises(
        RuntimeError, match=r"3 optimizer steps in a row had a non-finite gradient \(steps \[3, 4, 5\]\)"
    ):
        trainer.train()
    assert guard.skipped_steps == [1, 3, 4, 5]


def test_the_guard_needs_a_positive_limit():
    with pytest.raises(ValueError, match="max_in_a_row must be >= 1"):
        NonFiniteGradientGuard(0)
