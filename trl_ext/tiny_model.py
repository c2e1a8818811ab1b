"""A tiny randomly initialised chat model with a locally trained tokenizer (no Hub access needed).

Used by the tests, the CPU recipe and the learning-curve script. The tokenizer is a byte-level BPE trained on a
small built-in corpus (chat words, digits, Python / Triton snippets), so it encodes any text, with a ChatML
template whose end-of-turn token ``<|im_end|>`` is the eos. The model is a 2-layer Qwen2 with hidden size 64.

    python -m trl_ext.tiny_model --out runs/tiny-model
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

_CORPUS = [
    "Guess the secret digit. Wrong. The secret digit is 0 1 2 3 4 5 6 7 8 9. Correct.",
    "You write custom Triton kernels to replace the PyTorch operators in the given architecture to get speedups.",
    "Server feedback (status/metrics/errors): compiled correctness speedup reward runtime error traceback.",
    "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n",
    "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    def forward(self, a, b):\n"
    "        return a + b\n\n\ndef get_inputs():\n    return [torch.randn(1024), torch.randn(1024)]\n\n\n"
    "def get_init_inputs():\n    return []\n",
    "@triton.jit\ndef add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):\n"
    "    pid = tl.program_id(axis=0)\n    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)\n"
    "    mask = offsets < n_elements\n    x = tl.load(x_ptr + offsets, mask=mask)\n"
    "    tl.store(out_ptr + offsets, x + y, mask=mask)\n",
    "class ModelNew(nn.Module):\n    def forward(self, a, b):\n        out = torch.empty_like(a)\n"
    "        grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']),)\n        return out\n",
    "```python\n```\n",
]


def build_tokenizer(vocab_size: int = 400, extra_corpus: Sequence[str] = ()):
    """Train the byte-level BPE tokenizer and wrap it as a ``PreTrainedTokenizerFast`` with a chat template.

    ``extra_corpus``: more text to learn merges from (the pipeline passes its SFT training split: with words of
    the task template and of Triton code as single tokens, a trajectory is ~1.4k tokens instead of ~2.5k, and the
    2-layer model learns its training answers in minutes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([*_CORPUS * 4, *extra_corpus], trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def build_model(tokenizer, hidden_size: int = 64, num_layers: int = 2, seed: int = 0):
    """A randomly initialised Qwen2 causal LM sized for CPU tests."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=16384,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def save_tiny_model(
    out: str | Path,
    hidden_size: int = 64,
    num_layers: int = 2,
    seed: int = 0,
    *,
    vocab_size: int = 400,
    extra_corpus: Sequence[str] = (),
) -> Path:
    """Build and save model + tokenizer under ``out``; returns the folder (loadable with from_pretrained)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(vocab_size, extra_corpus)
    model = build_model(tokenizer, hidden_size=hidden_size, num_layers=num_layers, seed=seed)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    logger.info("saved tiny model (%d parameters) to %s", sum(p.numel() for p in model.parameters()), out)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", required=True, help="folder to write the model and tokenizer to")
    parser.add_argument("--hidden-size", type=int, default=64, help="hidden size (default 64)")
    parser.add_argument("--num-layers", type=int, default=2, help="decoder layers (default 2)")
    parser.add_argument("--seed", type=int, default=0, help="initialisation seed")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    save_tiny_model(args.out, args.hidden_size, args.num_layers, args.seed)


if __name__ == "__main__":
    main()
