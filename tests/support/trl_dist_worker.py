"""Worker of test_distributed: one rollout + scoring per rank under `accelerate launch`; writes its samples'
task ids, per-turn rewards and per-turn advantages to OUT/rank{N}.json, and the outcome of one loss with MRS
decided inside it (rank 0's first trajectory mismatched) to OUT/mrs_rank{N}.json."""

import json
import random
import sys
from pathlib import Path

import torch
from datasets import Dataset

from trl_ext.config import MultiTurnKernelConfig
from trl_ext.env import DigitGuessEnvironment, make_toy_tasks
from trl_ext.generation import GenerationOutput
from trl_ext.tiny_model import build_model, build_tokenizer
from trl_ext.trainer import TRLOOTrainer


class RandomDigitBackend:
    """Answers a random digit (seeded per rank): rewards vary within groups, some episodes stop early."""

    def __init__(self, tok, seed):
        self.tok, self.rng = tok, random.Random(seed)

    def generate(self, prompts):
        return [
            GenerationOutput(
                ids := self.tok.encode(str(self.rng.randrange(3)), add_special_tokens=False)
                + [self.tok.eos_token_id],
                [-1.0] * len(ids),
            )
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
        output_dir=str(out / "run"),
        use_cpu=True,
        bf16=False,
        per_device_train_batch_size=3,
        num_generations=2,
        max_completion_length=4,
        max_steps=1,
        report_to="none",
        save_strategy="no",
        max_turns=3,
        seed=0,
        use_mrs=True,
    )
    trainer = Trainer(
        model=build_model(tok),
        environment=DigitGuessEnvironment(stop_on_success=True),
        args=args,
        train_dataset=Dataset.from_list(tasks),
        processing_class=tok,
    )
    trainer.model.train()
    batch = next(iter(trainer.get_train_dataloader()))
    output = trainer._generate_and_score_completions(batch)
    samples = []
    for n, traj in enumerate(trainer._trajectories):
        turn_ids = torch.tensor(traj.turn_ids)
        adv = [
            float(output["advantages"][n, : len(turn_ids)][turn_ids == t][0]) for t in range(len(traj.turns))
        ]
        samples.append({"uuid": traj.task["extra_info"]["uuid"], "rewards": traj.rewards, "advantages": adv})
    rank = trainer.accelerator.process_index
    (out / f"rank{rank}.json").write_text(json.dumps(samples))
    mrs_in_loss(trainer, output, out, rank)


def mrs_in_loss(trainer, output, out: Path, rank: int) -> None:
    """One loss with MRS decided inside it: rank 0's first trajectory is 0.1 nats off, everything else exact."""
    from trl import GRPOTrainer

    assert "mrs_mask" in output, "expected MRS to be left to the loss (one micro-batch per generation batch)"
    rollout = trainer._train_logps(output).clone()  # the trainer's own log-probs: ratio 1
    if rank == 0:
        rollout[0] += 0.1
    output["sampling_per_token_logps"] = rollout
    seen = {}
    base_loss = GRPOTrainer._compute_loss

    def recording_loss(self, model, batch):
        seen["num_items_in_batch"] = int(batch["num_items_in_batch"])
        seen["local_loss_tokens"] = int((batch["completion_mask"] * batch["tool_mask"]).sum())
        return base_loss(self, model, batch)

    GRPOTrainer._compute_loss = recording_loss
    trainer.current_gradient_accumulation_steps = 1  # set by train(); the loss is called directly here
    trainer.compute_loss(trainer.model, output).backward()
    trainer._flush_mrs_metrics("train")
    seen["rejected_frac"] = trainer._metrics["train"]["mrs/rejected_frac"][-1]
    seen["local_rows"] = int(output["completion_ids"].size(0))
    (out / f"mrs_rank{rank}.json").write_text(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    # Both ranks leave together and tear gloo down before interpreter exit: a rank exiting with gloo threads still
    # alive can die in std::terminate (SIGABRT, seen once in a fresh-clone CI run) after writing its results.
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()
