"""Overhead of TRLOOTrainer over a plain GRPOTrainer step on the same tokens (environment time excluded).

Both trainers see identical token sequences: TRLOOTrainer runs its multi-turn loop with a scripted generation
backend (fixed random tokens, so model sampling cost is out of the comparison) and the toy environment; every
step's resulting (prompt ids, completion ids with feedback, env_mask) is recorded and replayed to a plain
GRPOTrainer through TRL's ``rollout_func`` hook. Each optimizer step is timed in wall-clock seconds and in
process CPU seconds; the TRLOO side has its environment time subtracted. Arms: the GRPO replay, TRLOO without
MRS, TRLOO + MRS inside the loss, TRLOO + MRS at generation time; every arm runs once per round, the order
rotating between rounds (benchmarks/README.md says why). Reported: median per-step times over the measured
steps of all rounds, the relative overhead vs GRPO (CPU time is the headline figure) and its range over
rounds, written to ``--out``/overhead.json.

    python benchmarks/bench_trainer_overhead.py --out runs/bench_overhead
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

        from trl_ext.generation import GenerationOutput

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
        vocab_size=len(tok),
        hidden_size=args.hidden,
        intermediate_size=4 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(seed)
    return Qwen2ForCausalLM(config), tok, Dataset.from_list(make_toy_tasks(64, seed=seed))


def common_args(args, out, **extra):
    values = dict(
        output_dir=str(out),
        use_cpu=True,
        bf16=False,
        seed=0,
        max_steps=args.steps,
        learning_rate=1e-4,
        per_device_train_batch_size=args.batch,
        num_generations=args.generations,
        max_completion_length=args.tokens,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    values.update(extra)
    return values


def run_trloo(args, use_mrs: bool, mrs_in_loss: bool = True):
    from trl_ext.config import MultiTurnKernelConfig
    from trl_ext.env import DigitGuessEnvironment
    from trl_ext.trainer import TRLOOTrainer

    model, tok, dataset = build(args, 0)
    recorded = []

    class Recording(TRLOOTrainer):
        def _generation_backend(self):
            return self._bench_backend

        def _mrs_in_loss_supported(self, mode):
            return mrs_in_loss and super()._mrs_in_loss_supported(mode)

        def _multi_turn_rollout(self, prompts, trainer):
            output = super()._multi_turn_rollout(prompts, trainer)
            recorded.append(
                {
                    k: output[k]
                    for k in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "turn_rewards")
                }
            )
            return output

    config = MultiTurnKernelConfig(
        **common_args(args, args.out / "trloo", max_turns=args.turns, use_mrs=use_mrs)
    )
    timer = step_timer()
    trainer = Recording(
        model=model,
        environment=DigitGuessEnvironment(),
        args=config,
        train_dataset=dataset,
        processing_class=tok,
        callbacks=[timer],
    )
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
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=[trajectory_return],
            args=config,
            train_dataset=dataset,
            processing_class=tok,
            rollout_func=rollout_func,
            callbacks=[timer],
        )
    trainer.train()
    return timer.samples


ARMS = {  # label -> (TRLOO use_mrs, MRS inside the loss); None = the plain GRPOTrainer replay
    "grpo": None,
    "trloo": (False, True),
    "trloo+mrs": (True, True),
    "trloo+mrs@gen": (True, False),
}


def summarise(times: dict[str, list[list[tuple[float, float]]]], warmup: int) -> dict:
    """Per arm: pooled median step time (wall, cpu) and, vs GRPO, the pooled and per-round overheads."""
    results = {}
    for label, runs in times.items():
        row = {}
        for k, name in ((0, "wall"), (1, "cpu")):
            row[f"{name}_s_median"] = statistics.median(x[k] for run in runs for x in run[warmup:])
            row[f"{name}_s"] = [[x[k] for x in run] for run in runs]
            if label != "grpo":
                base = times["grpo"]
                row[f"overhead_{name}"] = (
                    row[f"{name}_s_median"] / statistics.median(x[k] for run in base for x in run[warmup:])
                    - 1.0
                )
                row[f"overhead_{name}_per_round"] = [
                    statistics.median(x[k] for x in run[warmup:])
                    / statistics.median(x[k] for x in g[warmup:])
                    - 1.0
                    for run, g in zip(runs, base, strict=True)
                ]
        results[label] = row
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for overhead.json")
    parser.add_argument("--steps", type=int, default=12, help="training steps per run")
    parser.add_argument(
        "--warmup", type=int, default=2, help="first steps of each run left out of the statistics"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs per arm, the arm order rotating each round"
    )
    parser.add_argument("--batch", type=int, default=8, help="trajectories per step")
    parser.add_argument("--generations", type=int, default=4, help="samples per prompt")
    parser.add_argument("--turns", type=int, default=3, help="turns per trajectory")
    parser.add_argument("--tokens", type=int, default=64, help="tokens per turn")
    parser.add_argument("--hidden", type=int, default=256, help="model hidden size")
    parser.add_argument("--layers", type=int, default=4, help="model layers")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch CPU threads (1 = least sensitive to load)"
    )
    args = parser.parse_args(argv)
    if args.steps <= args.warmup or args.rounds < 1:
        parser.error(
            f"need --steps > --warmup and --rounds >= 1, got {args.steps}, {args.warmup}, {args.rounds}"
        )
    import torch
    from tqdm import tqdm

    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(args.threads)

    labels = list(
        ARMS
    )  # "grpo" first: rotations by 1..len-1 never start with it, and the first run must be a
    # TRLOO one, which records the tokens that GRPO replays
    schedule = [
        labels[1 + r % (len(labels) - 1) :] + labels[: 1 + r % (len(labels) - 1)] for r in range(args.rounds)
    ]
    times = {label: [] for label in labels}
    env_s = {label: [] for label in labels if label != "grpo"}
    recorded = None
    with tqdm(total=sum(len(order) for order in schedule), desc="runs") as bar:
        for order in schedule:
            for label in order:
                bar.set_postfix_str(label)
                if ARMS[label] is None:
                    times[label].append(run_grpo(args, recorded))
                else:
                    run_times, tokens, env = run_trloo(args, *ARMS[label])
                    if recorded is None:
                        recorded = tokens
                    elif [r["completion_ids"] for r in tokens] != [r["completion_ids"] for r in recorded]:
                        raise RuntimeError(
                            f"{label} saw other tokens than the recorded run; the comparison is void"
                        )
                    times[label].append(run_times)
                    env_s[label].append(env)
                bar.update()
    results = summarise(times, args.warmup)
    tokens_per_step = sum(len(c) for step in recorded for c in step["completion_ids"]) / len(recorded)
    for label, env in env_s.items():
        results[label]["environment_s"] = env
    report = {
        "config": {k: str(v) for k, v in vars(args).items()},
        "schedule": schedule,
        "tokens_per_step": tokens_per_step,
        "results": results,
    }
    (args.out / "overhead.json").write_text(json.dumps(report, indent=1))
    print(
        f"median of {args.rounds} x {args.steps - args.warmup} steps per arm, environment time excluded, "
        f"{args.threads} torch thread(s), {tokens_per_step:.0f} completion tokens per step"
    )
    print(f"{'arm':<14} {'cpu s':>7} {'overhead':>9} {'per round':>18} {'wall s':>7} {'overhead':>9}")
    for label, r in results.items():
        if label == "grpo":
            print(f"{label:<14} {r['cpu_s_median']:>7.3f} {'':>9} {'':>18} {r['wall_s_median']:>7.3f}")
            continue
        spread = r["overhead_cpu_per_round"]
        print(
            f"{label:<14} {r['cpu_s_median']:>7.3f} {100 * r['overhead_cpu']:>8.1f}% "
            f"{100 * min(spread):>8.1f}..{100 * max(spread):>5.1f}%  {r['wall_s_median']:>7.3f} "
            f"{100 * r['overhead_wall']:>8.1f}%"
        )
    print(f"wrote {args.out / 'overhead.json'}")


if __name__ == "__main__":
    main()
