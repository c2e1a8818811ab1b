"""Convert a GGUF model into a transformers folder (weights de-quantized, tokenizer and chat template kept).

The GPU machine gets models only as files carried in pieces (``tools/split_file.py``); the trainer, SFT and the
evaluation harness read transformers folders. With ``--tie-output`` the output matrix is re-tied to the token
embeddings: the file came with the output tensor's bytes left out (zeros, ``split_file.py --zero-gguf-tensor
output.weight``), and for a model trained with tied embeddings (Qwen2.5-0.5B) that tensor is only a second
quantization of the embedding matrix. Measured on Qwen2.5-Coder-0.5B-Instruct Q4_K_M (on a CPU): the tied
model's next-token distributions differ from the untied file's by a mean KL of 0.0067 nats on a chat prompt, and
the first 40 greedy tokens are identical.

    python tools/gguf_to_hf.py --gguf model.gguf --out DIR [--tie-output] [--eos-token '<|im_end|>'] [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def convert(gguf: Path, out: Path, *, tie_output: bool, dtype: str, eos_token: str | None = None) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    started = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if eos_token is not None:
        # transformers versions read a GGUF's eos differently (5.17 gives Qwen2.5's <|endoftext|>, 5.24 its
        # <|im_end|>); generation must stop at the chat template's end-of-turn token, so it is set explicitly.
        if eos_token not in tokenizer.get_vocab():
            raise ValueError(f"--eos-token {eos_token!r} is not in the tokenizer's vocabulary")
        tokenizer.eos_token = eos_token
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    head, embed = model.get_output_embeddings(), model.get_input_embeddings()
    if tie_output:
        if head is not embed and float(head.weight.abs().max()) != 0.0:
            raise ValueError(
                f"{gguf}: --tie-output expects the output matrix left out (all zeros), but it has "
                "values; convert without --tie-output"
            )
        model.config.tie_word_embeddings = True
        model.tie_weights()
        if model.get_output_embeddings().weight.data_ptr() != embed.weight.data_ptr():
            raise RuntimeError("tying the output matrix to the embeddings did not take effect")
    elif float(head.weight.abs().max()) == 0.0:
        raise ValueError(f"{gguf}: the output matrix is all zeros (left out in transfer?); pass --tie-output")
    # The loaded model is marked as GGUF-quantized (transformers refuses to save it); its weights are already
    # de-quantized, so they move into a plain model built from the same config.
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(model.state_dict(), strict=False)
    if unexpected or [m for m in missing if not (tie_output and m.endswith("lm_head.weight"))]:
        raise RuntimeError(
            f"weights did not map onto the plain model: missing {missing}, unexpected {unexpected}"
        )
    plain.tie_weights()
    plain.generation_config = model.generation_config
    plain.generation_config.eos_token_id = tokenizer.eos_token_id
    model = plain.to(getattr(torch, dtype))
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    info = {
        "gguf": str(gguf),
        "out": str(out),
        "tied_output": tie_output,
        "dtype": dtype,
        "parameters": sum(p.numel() for p in model.parameters()),
        "eos_token": tokenizer.eos_token,
        "pad_token": tokenizer.pad_token,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "conversion.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return info


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gguf", type=Path, required=True, help="the GGUF file")
    parser.add_argument("--out", type=Path, required=True, help="the transformers folder to write")
    parser.add_argument(
        "--tie-output",
        action="store_true",
        help="tie the (left-out, all-zero) output matrix to the token embeddings",
    )
    parser.add_argument(
        "--eos-token",
        default=None,
        help="set the tokenizer's eos (the chat template's end-of-turn token, e.g. <|im_end|>)",
    )
    parser.add_argument(
        "--dtype",
        default="bfloat16",
        choices=["float32", "bfloat16", "float16"],
        help="dtype of the saved weights (default bfloat16)",
    )
    args = parser.parse_args(argv)
    if not args.gguf.is_file():
        parser.error(f"no such GGUF file: {args.gguf}")
    print(
        json.dumps(
            convert(
                args.gguf, args.out, tie_output=args.tie_output, dtype=args.dtype, eos_token=args.eos_token
            ),
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
