"""Overhead of TRLOOTrainer over a plain GRPOTrainer step on the same tokens (environment time excluded).

Both trainers see identical token sequences: TRLOOTrainer runs its multi-turn loop with a scripted generation
backend (fixed random tokens, so model sampling cost is out of the comparison) and the toy environment; every
step's resulting (prompt ids, completion ids with feedback, env_mask) is recorded and replayed to a plain
GRPOTrainer through TRL's ``rollout_func`` hook. Each optimizer step is timed by a callback in wall-clock
seconds and in process CPU seconds (user + system of this process, all threads; far less sensitive than wall
time to other load on a shared machine); the TRLOO side has its environment time subtracted. Reported: median
per-step times over the measured steps and the relative overhead (CPU time is the headline figure).

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


def step_timer():
    """A TrainerCallback recording (wall_s, cpu_s) per optimizer step."""
    import resource
    import time

    from transformers import TrainerCallback

    def cpu_now():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.samples = []

        def on_step_begin(self, args, state, control, **kwargs):
            self._wall, self._cpu = time.perf_counter(), cpu_now()

        def on_step_end(self, args, state, control, **kwargs):
            self.samples.append((time.perf_counter() - self._wall, cpu_now() - self._cpu))

    return StepTimer()


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
    timer = step_timer()
    trainer = Recording(model=model, environment=DigitGuessEnvironment(), args=config, train_dataset=dataset,
                        processing_class=tok, callbacks=[timer])
    trainer._bench_backend = ScriptedBackend(len(tok), tok.eos_token_id, args.tokens)
    trainer.train()
    logs = [h for h in trainer.state.log_history if "step_time" in h]
    env_s = [h["time/environment_s"] for h in logs]
    # The toy environment is pure Python in this process: its wall time is also (at most) its CPU time.
    times = [(w - e, c - e) for (w, c), e in zip(timer.samples, env_s, strict=True)]
    return times, recorded, env_s


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
        timer = step_timer()
        trainer = GRPOTrainer(model=model, reward_funcs=[trajectory_return], args=config, train_dataset=dataset,
                              processing_class=tok, rollout_func=rollout_func, callbacks=[timer])
    trainer.train()
    return timer.samples


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
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 = least sensitive to load)")
    args = parser.parse_args(argv)
    import torch

    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)

    torch.set_num_threads(args.threads)
    results = {}
    for label, use_mrs in (("trloo", False), ("trloo+mrs", True)):
        trloo_times, recorded, env_s = run_trloo(args, use_mrs)
        grpo_times = run_grpo(args, recorded)
        row = {"environment_s": env_s,
               "tokens_per_step": sum(len(c) for step in recorded for c in step["completion_ids"]) / len(recorded)}
        for k, name in ((0, "wall"), (1, "cpu")):
            t = statistics.median(x[k] for x in trloo_times[args.warmup :])
            g = statistics.median(x[k] for x in grpo_times[args.warmup :])
            row[f"trloo_{name}_s_median"], row[f"grpo_{name}_s_median"], row[f"overhead_{name}"] = t, g, t / g - 1.0
            row[f"trloo_{name}_s"] = [x[k] for x in trloo_times]
            row[f"grpo_{name}_s"] = [x[k] for x in grpo_times]
        results[label] = row
    (args.out / "overhead.json").write_text(json.dumps({"config": {k: str(v) for k, v in vars(args).items()}, "results": results}, indent=1))
    print(f"median of {args.steps - args.warmup} steps, environment time excluded, {args.threads} torch thread(s)")
    print(f"{'variant':<10} {'GRPO cpu s':>11} {'TRLOO cpu s':>12} {'overhead':>9} {'GRPO wall s':>12} {'TRLOO wall s':>13} {'overhead':>9}")
    for label, r in results.items():
        print(f"{label:<10} {r['grpo_cpu_s_median']:>11.3f} {r['trloo_cpu_s_median']:>12.3f} {100 * r['overhead_cpu']:>8.1f}% "
              f"{r['grpo_wall_s_median']:>12.3f} {r['trloo_wall_s_median']:>13.3f} {100 * r['overhead_wall']:>8.1f}%")
    print(f"wrote {args.out / 'overhead.json'}")


if __name__ == "__main__":
    main()
