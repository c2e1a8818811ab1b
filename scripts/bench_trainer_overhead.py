"""Overhead of TRLOOTrainer over a plain GRPOTrainer step on the same tokens (environment time excluded).

Both trainers see identical token sequences: TRLOOTrainer runs its multi-turn loop with a scripted generation
backend (fixed random tokens, so model sampling cost is out of the comparison) and the toy environment; every
step's resulting (prompt ids, completion ids with feedback, env_mask) is recorded and replayed to a plain
GRPOTrainer through TRL's ``rollout_func`` hook. Step time = TRL's ``step_time`` metric; the TRLOO side has
its environment time subtracted. Reported: median step times over the measured steps and the relative overhead.

    python scripts/bench_trainer_overhead.py --out runs/bench_overhead
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

logger = logging.getLogger("bench_trainer_overhead")


class ScriptedBackend:
    """Fixed pseudo-random completions (seeded by call count) ending with eos; constant fake log-probs."""

    def __init__(self, vocab: int, eos: int, tokens: int, seed: int = 0):
        import torch

        self.gen = torch.Generator().manual_seed(seed)
        self.vocab, self.eos, self.tokens = vocab, eos, tokens

    def generate(self, prompts):
        import torch

        from trl_ext.rollout import GenerationOutput

        out = []
        for _ in prompts:
            ids = torch.randint(3, self.vocab, (self.tokens - 1,), generator=self.gen).tolist() + [self.eos]
            out.append(GenerationOutput(ids, [-1.0] * len(ids)))
        return out


def build(args, seed):
    import torch
    from datasets import Dataset
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from trl_ext.env import make_toy_tasks
    from trl_ext.tiny_model import build_tokenizer

    tok = build_tokenizer()
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=args.hidden, intermediate_size=4 * args.hidden, num_hidden_layers=args.layers,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=4096, tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config), tok, Dataset.from_list(make_toy_tasks(64, seed=seed))


def common_args(args, out, **extra):
    values = dict(
        output_dir=str(out), use_cpu=True, bf16=False, seed=0, max_steps=args.steps, learning_rate=1e-4,
        per_device_train_batch_size=args.batch, num_generations=args.generations,
        max_completion_length=args.tokens, logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True,
    )
    values.update(extra)
    return values


def run_trloo(args, use_mrs: bool):
    from trl_ext.config import MultiTurnKernelConfig
    from trl_ext.env import DigitGuessEnvironment
    from trl_ext.trainer import TRLOOTrainer

    model, tok, dataset = build(args, 0)
    recorded = []

    class Recording(TRLOOTrainer):
        def _generation_backend(self):
            return self._bench_backend

        def _multi_turn_rollout(self, prompts, trainer):
            output = super()._multi_turn_rollout(prompts, trainer)
            recorded.append({k: output[k] for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "turn_rewards")})
            return output

    config = MultiTurnKernelConfig(**common_args(args, args.out / "trloo", max_turns=args.turns, use_mrs=use_mrs))
    trainer = Recording(model=model, environment=DigitGuessEnvironment(), args=config, train_dataset=dataset, processing_class=tok)
    trainer._bench_backend = ScriptedBackend(len(tok), tok.eos_token_id, args.tokens)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "step_time" in h]
    times = [h["step_time"] - h["time/environment_s"] for h in logs]
    return times, recorded, logs


def run_grpo(args, recorded):
    from trl import GRPOConfig, GRPOTrainer

    model, tok, dataset = build(args, 0)
    replay = iter(recorded)

    def rollout_func(prompts, trainer):
        return dict(next(replay))

    def trajectory_return(completions, turn_rewards, **kwargs):
        return [float(sum(r)) for r in turn_rewards]

    config = GRPOConfig(**common_args(args, args.out / "grpo"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = GRPOTrainer(model=model, reward_funcs=[trajectory_return], args=config, train_dataset=dataset,
                              processing_class=tok, rollout_func=rollout_func)
    trainer.train()
    return [h["step_time"] for h in trainer.state.log_history if "step_time" in h]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for overhead.json")
    parser.add_argument("--steps", type=int, default=12, help="training steps per trainer")
    parser.add_argument("--warmup", type=int, default=2, help="first steps left out of the statistics")
    parser.add_argument("--batch", type=int, default=8, help="trajectories per step")
    parser.add_argument("--generations", type=int, default=4, help="samples per prompt")
    parser.add_argument("--turns", type=int, default=3, help="turns per trajectory")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per turn")
    parser.add_argument("--hidden", type=int, default=256, help="model hidden size")
    parser.add_argument("--layers", type=int, default=4, help="model layers")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)

    results = {}
    for label, use_mrs in (("trloo", False), ("trloo+mrs", True)):
        trloo_times, recorded, logs = run_trloo(args, use_mrs)
        grpo_times = run_grpo(args, recorded)
        t = statistics.median(trloo_times[args.warmup :])
        g = statistics.median(grpo_times[args.warmup :])
        results[label] = {
            "trloo_step_s_median": t,
            "grpo_step_s_median": g,
            "overhead_frac": t / g - 1.0,
            "trloo_step_s": trloo_times,
            "grpo_step_s": grpo_times,
            "environment_s": [h["time/environment_s"] for h in logs],
            "tokens_per_step": sum(len(c) for step in recorded for c in step["completion_ids"]) / len(recorded),
        }
    (args.out / "overhead.json").write_text(json.dumps({"config": {k: str(v) for k, v in vars(args).items()}, "results": results}, indent=1))
    print(f"{'variant':<10} {'GRPO step s':>12} {'TRLOO step s':>13} {'overhead':>9}   (median of {args.steps - args.warmup} steps, env time excluded)")
    for label, r in results.items():
        print(f"{label:<10} {r['grpo_step_s_median']:>12.4f} {r['trloo_step_s_median']:>13.4f} {100 * r['overhead_frac']:>8.1f}%")
    print(f"wrote {args.out / 'overhead.json'}")


if __name__ == "__main__":
    main()
