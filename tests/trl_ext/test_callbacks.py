"""trl_ext.callbacks: the wall-clock budget and the log written as training goes, in a real Trainer run."""

import json

import pytest
import torch

pytest.importorskip("transformers")

from transformers import Trainer, TrainingArguments  # noqa: E402

from trl_ext.callbacks import LogHistoryWriter, TimeBudget  # noqa: E402


class _Linear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)

    def forward(self, x, labels=None):
        out = self.layer(x).squeeze(-1)
        return {"loss": torch.nn.functional.mse_loss(out, labels), "logits": out}


def _data(n=64):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=generator)
    return [{"x": row, "labels": row.sum()} for row in x]


def _trainer(tmp_path, callbacks, max_steps=20):
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
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
