"""TRLOOTrainer with LoRA against the real kernel reward on one GPU: step time split and metrics.

Two parts, one process:
1. ``--steps`` training steps of a randomly initialised causal LM of small realistic shape (no Hub access on the
   GPU machine) with a LoRA adapter, generating with transformers on the GPU and evaluating every turn with
   ``kernel_reward`` (``KernelEnvironment``, device cuda). A random model writes no code, so this part measures
   the plumbing and the time split, not learning.
2. ``--scripted-steps`` steps where the generation backend replays known completions (honest / wrong / decoy /
   prose Triton SiLU) so the GPU reward's timing, speedup, coverage, Fast@p and PRS paths are exercised.

    python scripts/gpu_trloo_run.py --out OUT [--device cuda]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

logger = logging.getLogger("gpu_trloo_run")

HONEST = '''```python
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def silu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * tl.sigmoid(x), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        silu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
```
'''
WRONG = HONEST.replace("x * tl.sigmoid(x)", "x * 0.5")
DECOY = HONEST.replace("        return out\n", "        return torch.nn.functional.silu(x)\n")
PROSE = "I would fuse the activation into one kernel."
TASKS = ["activation_silu", "softmax_rows", "norm_rms_norm", "elementwise_addcmul"]


def rows(names, preset):
    from dataset_builder.prompt import first_turn_messages
    from dataset_builder.tasks import load_tasks

    return [
        {
            "data_source": "drkernel_sample",
            "prompt": first_turn_messages(task.source),
            "ability": "kernel_optimization",
            "reward_model": {"style": "rule", "ground_truth": task.source},
            "extra_info": {"uuid": task.name, "entry_point": "Model"},
        }
        for task in load_tasks(preset, names=names)
    ]


def make_config(out, steps, batch, generations, device, **extra):
    from trl_ext.config import MultiTurnKernelConfig

    values = dict(
        output_dir=str(out), use_cpu=device == "cpu", bf16=False, seed=0, max_steps=steps, learning_rate=1e-4,
        per_device_train_batch_size=batch, num_generations=generations, max_completion_length=64, max_turns=2,
        logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True, use_mrs=True,
        mrs_lower=0.99, mrs_upper=1.01, use_prs=True, reward_scheme="drkernel",
    )
    values.update(extra)
    return MultiTurnKernelConfig(**values)


def summarize(trainer) -> list[dict]:
    return [h for h in trainer.state.log_history if "turn_1/reward" in h]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_trloo.json")
    parser.add_argument("--device", default="cuda", help="cuda (default) or cpu for a dry run")
    parser.add_argument("--steps", type=int, default=10, help="training steps of part 1")
    parser.add_argument("--scripted-steps", type=int, default=2, help="steps of part 2")
    parser.add_argument("--hidden", type=int, default=512, help="hidden size of the random model")
    parser.add_argument("--layers", type=int, default=8, help="layers of the random model")
    parser.add_argument("--preset", default="full", choices=["small", "full"], help="task size preset")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)

    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from kernel_reward.env import KernelEnvironment
    from trl_ext.rollout import GenerationOutput
    from trl_ext.tiny_model import build_tokenizer
    from trl_ext.trainer import TRLOOTrainer

    tok = build_tokenizer()
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=args.hidden, intermediate_size=4 * args.hidden, num_hidden_layers=args.layers,
        num_attention_heads=8, num_key_value_heads=4, max_position_embeddings=16384, tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    n_params = sum(p.numel() for p in model.parameters())
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    report = {"device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu", "model_params": n_params}

    started = time.perf_counter()
    with KernelEnvironment(device=args.device, timeout=120) as env:
        report["evaluator_start_s"] = time.perf_counter() - started
        trainer = TRLOOTrainer(
            model=model, environment=env, args=make_config(args.out / "p1", args.steps, 8, 4, args.device),
            train_dataset=Dataset.from_list(rows(TASKS, args.preset)), processing_class=tok, peft_config=lora,
        )
        t0 = time.perf_counter()
        trainer.train()
        report["part1_train_s"] = time.perf_counter() - t0
        report["part1"] = summarize(trainer)

        texts = [HONEST, WRONG, DECOY, PROSE]

        class Scripted:
            def __init__(self, tokenizer):
                self.tokenizer = tokenizer

            def generate(self, prompts):
                out = []
                for i, _ in enumerate(prompts):
                    ids = self.tokenizer.encode(texts[i % 4], add_special_tokens=False) + [self.tokenizer.eos_token_id]
                    out.append(GenerationOutput(ids, [float("nan")] * len(ids)))
                return out

        class ScriptedTrainer(TRLOOTrainer):
            def _generation_backend(self):
                return Scripted(self._tokenizer)

        model2 = Qwen2ForCausalLM(config)
        trainer2 = ScriptedTrainer(
            model=model2, environment=env,
            args=make_config(args.out / "p2", args.scripted_steps, 4, 4, args.device, use_mrs=False),
            train_dataset=Dataset.from_list(rows(["activation_silu"], args.preset)), processing_class=tok,
            peft_config=lora,
        )
        trainer2.train()
        report["part2"] = summarize(trainer2)
        report["part2_turns"] = [
            {k: t.turns[0].result.details["eval_result"].get(k) for k in ("status", "speedup", "coverage", "reward", "hack_reasons")}
            for t in trainer2._trajectories
        ]
    (args.out / "gpu_trloo.json").write_text(json.dumps(report, indent=1, default=str))

    keys = ["step_time", "time/generation_s", "time/environment_s", "time/optimization_s", "turn_1/reward",
            "turn_1/formatted", "turn_1/correct", "turn_2/correct", "mrs/rejected_frac", "mrs/mean_abs_log_ratio"]
    print(f"device {report['device']}; model {n_params / 1e6:.1f} M params (random init) + LoRA r16; "
          f"evaluator start {report['evaluator_start_s']:.1f} s; part 1 train {report['part1_train_s']:.1f} s")
    print("part 1 (policy samples):")
    print("step " + " ".join(f"{k.split('/')[-1][:12]:>12}" for k in keys))
    for i, h in enumerate(report["part1"], start=1):
        print(f"{i:>4} " + " ".join(f"{h.get(k, float('nan')):>12.4g}" for k in keys))
    keys2 = ["turn_1/reward", "turn_1/correct", "turn_1/hacked", "turn_1/fast_1", "turn_1/fast_1.2", "turn_1/speedup",
             "turn_1/coverage", "prs/rejected_frac_of_correct", "time/environment_s"]
    print("part 2 (scripted honest / wrong / decoy / prose SiLU):")
    print("step " + " ".join(f"{k.split('/')[-1][:12]:>12}" for k in keys2))
    for i, h in enumerate(report["part2"], start=1):
        print(f"{i:>4} " + " ".join(f"{h.get(k, float('nan')):>12.4g}" for k in keys2))
    for turn in report["part2_turns"]:
        print("   ", turn)


if __name__ == "__main__":
    main()
