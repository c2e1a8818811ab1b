"""Worker of test_trl_distributed: one rollout + scoring per rank under `accelerate launch`; writes its samples'
task ids, per-turn rewards and per-turn advantages to OUT/rank{N}.json."""

import json
import random
import sys
from pathlib import Path

import torch
from datasets import Dataset

from trl_ext.config import MultiTurnKernelConfig
from trl_ext.env import DigitGuessEnvironment, make_toy_tasks
from trl_ext.rollout import GenerationOutput
from trl_ext.tiny_model import build_model, build_tokenizer
from trl_ext.trainer import TRLOOTrainer


class RandomDigitBackend:
    """Answers a random digit (seeded per rank): rewards vary within groups, some episodes stop early."""

    def __init__(self, tok, seed):
        self.tok, self.rng = tok, random.Random(seed)

    def generate(self, prompts):
        return [
            GenerationOutput(ids := self.tok.encode(str(self.rng.randrange(3)), add_special_tokens=False) + [self.tok.eos_token_id],
                             [-1.0] * len(ids))
            for _ in prompts
        ]


class Trainer(TRLOOTrainer):
    def _generation_backend(self):
        return RandomDigitBackend(self._tokenizer, 100 + self.accelerator.process_index)


def main(out: Path) -> None:
    tok = build_tokenizer()
    tasks = make_toy_tasks(6, seed=3)
    for i, row in enumerate(tasks):  # secrets 0..2 so random answers hit often
        row["reward_model"]["ground_truth"] = str(i % 3)
    args = MultiTurnKernelConfig(
        output_dir=str(out / "run"), use_cpu=True, bf16=False, per_device_train_batch_size=3, num_generations=2,
        max_completion_length=4, max_steps=1, report_to="none", save_strategy="no", max_turns=3, seed=0,
    )
    trainer = Trainer(model=build_model(tok), environment=DigitGuessEnvironment(stop_on_success=True), args=args,
                      train_dataset=Dataset.from_list(tasks), processing_class=tok)
    trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    output = trainer._generate_and_score_completions(batch)
    samples = []
    for n, traj in enumerate(trainer._trajectories):
        turn_ids = torch.tensor(traj.turn_ids)
        adv = [float(output["advantages"][n, : len(turn_ids)][turn_ids == t][0]) for t in range(len(traj.turns))]
        samples.append({"uuid": traj.task["extra_info"]["uuid"], "rewards": traj.rewards, "advantages": adv})
    rank = trainer.accelerator.process_index
    (out / f"rank{rank}.json").write_text(json.dumps(samples))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
