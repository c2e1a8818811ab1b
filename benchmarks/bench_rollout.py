"""Rollout generation speed: ms per decode step and tokens/s for each setting, plus the LoRA merge drift.

Settings crossed: batch sizes (``--batches``), how log-probs are kept (``recorder``: one float per token, as
the trainer does; ``scores``: transformers' ``output_scores``, for comparison), and LoRA (``none``,
``unmerged`` all-linear adapters, ``merged`` for generation). Every setting generates exactly ``--new-tokens``
tokens (no eos) from the same prompts, after one untimed warm-up call. The drift section merges and unmerges
the adapters ``--merge-cycles`` times in fp32 and bf16 and reports the largest change of a base weight.

    python benchmarks/bench_rollout.py                                  # tiny random Qwen2 on this machine
    python benchmarks/bench_rollout.py --model PATH --device cuda --batches 8,64 --json-out OUT.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch


def load_model(path: str | None, device: str, dtype: torch.dtype) -> tuple[Any, Any]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if path is None:
        from trl_ext.tiny_model import save_tiny_model

        path = str(save_tiny_model(Path(tempfile.mkdtemp(prefix="bench_rollout_"))))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device).eval()
    return model, AutoTokenizer.from_pretrained(path)


def with_lora(model: Any, rank: int) -> Any:
    import peft

    return peft.get_peft_model(
        model, peft.LoraConfig(r=rank, target_modules="all-linear", lora_dropout=0.0, init_lora_weights=False)
    )


class ScoresBackend:
    """transformers' own way, for comparison: ``output_scores`` and a log-softmax over all of them last."""

    def __init__(self, model: Any, config: Any, device: str) -> None:
        self.model, self.config, self.device = model, config, device

    def generate(self, prompts: list[list[int]]) -> list[Any]:
        ids = torch.tensor(prompts, device=self.device)
        out = self.model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            generation_config=self.config,
            output_scores=True,
            return_dict_in_generate=True,
        )
        scores = torch.stack(out.scores, dim=1).float()
        new = out.sequences[:, ids.size(1) :]
        return torch.log_softmax(scores, -1).gather(-1, new[..., None]).squeeze(-1).tolist()


def time_setting(backend: Any, prompts: list[list[int]], new_tokens: int, device: str) -> dict[str, float]:
    backend.generate(prompts)  # warm-up: first-call allocations and kernel selection
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    start = time.perf_counter()
    backend.generate(prompts)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return {"ms_per_step": 1e3 * seconds / new_tokens, "tokens_per_s": len(prompts) * new_tokens / seconds}


def merge_drift(model: Any, cycles: int, dtype: torch.dtype) -> float:
    """Largest change of a base weight after ``cycles`` merge + unmerge round trips in ``dtype``."""
    lora = with_lora(model.to(dtype), 8)
    before = {n: p.detach().clone() for n, p in lora.named_parameters() if "lora_" not in n}
    for _ in range(cycles):
        lora.merge_adapter()
        lora.unmerge_adapter()
    drift = max(
        (p.detach().float() - before[n].float()).abs().max().item()
        for n, p in lora.named_parameters()
        if "lora_" not in n
    )
    lora.unload()
    return drift


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", default=None, help="model directory (default: a tiny random Qwen2 built here)"
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--batches", default="1,8,32", help="comma-separated numbers of sequences per call")
    parser.add_argument("--prompt-tokens", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--lora-rank", type=int, default=16)
    parser.add_argument(
        "--merge-cycles", type=int, default=100, help="merge/unmerge round trips for the drift"
    )
    parser.add_argument("--json-out", type=Path, default=None)
    args = parser.parse_args(argv)

    from transformers import GenerationConfig

    from trl_ext.generation import TransformersBackend

    dtype = getattr(torch, args.dtype)
    model, tok = load_model(args.model, args.device, dtype)
    config = GenerationConfig(
        max_new_tokens=args.new_tokens,
        min_new_tokens=args.new_tokens,
        do_sample=True,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        pad_token_id=tok.pad_token_id,
        eos_token_id=[],
    )
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    rows = []
    for lora_mode in ("none", "unmerged", "merged"):
        target = with_lora(model, args.lora_rank) if lora_mode != "none" else model
        for batch in (int(b) for b in args.batches.split(",")):
            prompts = torch.randint(3, vocab, (batch, args.prompt_tokens), generator=generator).tolist()
            backends = {
                "recorder": TransformersBackend(
                    lambda t=target: contextlib.nullcontext(t),
                    config,
                    tok.pad_token_id,
                    [10**9],
                    device=args.device,
                    merge_lora=lora_mode == "merged",
                )
            }
            if lora_mode == "none":
                backends["scores"] = ScoresBackend(target, config, args.device)
            for logprobs, backend in backends.items():
                with torch.no_grad():
                    timing = time_setting(backend, prompts, args.new_tokens, args.device)
                rows.append({"lora": lora_mode, "batch": batch, "logprobs": logprobs, **timing})
                print(
                    f"{lora_mode:9} batch {batch:4} {logprobs:9} {timing['ms_per_step']:8.2f} ms/step "
                    f"{timing['tokens_per_s']:10.1f} tokens/s",
                    flush=True,
                )
        if lora_mode != "none":
            target.unload()
    drift = {
        name: merge_drift(model, args.merge_cycles, getattr(torch, name)) for name in ("float32", "bfloat16")
    }
    print(
        f"merge drift after {args.merge_cycles} merge/unmerge cycles (max |change| of a base weight): "
        + ", ".join(f"{k} {v:.3g}" for k, v in drift.items())
    )
    result = {
        "model": args.model or "tiny random Qwen2",
        "device": args.device,
        "dtype": args.dtype,
        "prompt_tokens": args.prompt_tokens,
        "new_tokens": args.new_tokens,
        "rows": rows,
        "merge_drift": {"cycles": args.merge_cycles, **drift},
    }
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
