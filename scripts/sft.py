"""Cold-start SFT on verified kernel trajectories (``dataset_builder.sft_data``) with TRL's ``SFTTrainer``.

    python -m dataset_builder.sft_data --count 200 --out runs/sft-data
    python scripts/sft.py --config recipes/tiny_cpu_sft.yaml

Every ``SFTConfig``, ``ModelConfig`` (incl. LoRA: ``--use_peft``) and script option below can be set in the
YAML or on the command line (``--help`` lists them). ``dataset_name`` is a JSON Lines file (the builder's
``train.jsonl``), a local dataset folder or a Hub id; rows need a ``messages`` column.

Loss on assistant turns only (``assistant_only_loss: true``): from the chat template's ``{% generation %}``
markers (TRL's own mask), or, for a template TRL cannot handle, ``--loss_mask offsets`` (chosen automatically
by ``auto``), which tokenizes here and trains the tokens that start inside an assistant turn's rendered span.
docs/training.md#cold-start-sft says how the spans are found.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from trl import ModelConfig, ScriptArguments, SFTConfig, TrlParser  # noqa: E402

from trl_ext.attention_backend import AttentionBackendArguments  # noqa: E402

logger = logging.getLogger("sft")

IGNORE_INDEX = -100


@dataclass
class SFTScriptArguments(ScriptArguments, AttentionBackendArguments):
    """Dataset, loss-mask and attention-backend options (``dataset_name``: a .jsonl file, a local dataset folder or a Hub id)."""

    loss_mask: Literal["auto", "trl", "offsets"] = field(
        default="auto",
        metadata={
            "help": "How assistant-only loss is masked: 'trl' (the chat template's {%% generation %%} markers, "
            "or TRL's patched training template), 'offsets' (tokenize here from rendered prefixes), 'auto' "
            "('trl' when TRL supports the template, else 'offsets'). Used only with assistant_only_loss."
        },
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "Keep only the first N rows (None: all)."}
    )
    kinds: list[str] | None = field(
        default=None,
        metadata={"help": "Keep only these trajectory kinds (single_turn, multi_turn); None: all."},
    )


def load_sft_dataset(script_args: SFTScriptArguments):
    """The training rows, reduced to their ``messages`` column."""
    from trl_ext.script_input import load_dataset_or_exit

    name = script_args.dataset_name
    if not name:
        raise SystemExit("error: --dataset_name is required (a .jsonl file, a dataset folder or a Hub id)")
    if name.endswith((".jsonl", ".json")):
        data = load_dataset_or_exit("json", data_files={script_args.dataset_train_split: name})
    else:
        data = load_dataset_or_exit(name, name=script_args.dataset_config)
    if script_args.dataset_train_split not in data:
        raise SystemExit(f"error: split {script_args.dataset_train_split!r} not in {list(data)}")
    train = data[script_args.dataset_train_split]
    if "messages" not in train.column_names:
        raise SystemExit(f"error: {name} has no 'messages' column (columns: {train.column_names})")
    if script_args.kinds:
        if "kind" not in train.column_names:
            raise SystemExit(f"error: --kinds given but {name} has no 'kind' column")
        train = train.filter(lambda row: row["kind"] in script_args.kinds)
    if script_args.max_train_samples is not None:
        train = train.select(range(min(script_args.max_train_samples, len(train))))
    if len(train) == 0:
        raise SystemExit(f"error: no training rows left in {name}")
    return train.select_columns(["messages"])


def trl_supports_template(tokenizer) -> bool:
    """Whether TRL 1.16's own assistant-only masking works for this tokenizer's chat template."""
    from trl.chat_template_utils import get_training_chat_template, has_generation_markers

    if tokenizer.chat_template is None:
        return False
    if has_generation_markers(tokenizer.chat_template):
        return True
    try:
        get_training_chat_template(tokenizer)
    except ValueError:
        return False
    return True


def assistant_token_mask(tokenizer, messages: list[dict[str, str]]) -> tuple[list[int], list[int]]:
    """``(input_ids, mask)`` of a conversation: mask 1 on tokens that start inside an assistant turn.

    An assistant turn's span runs from the end of the prompt rendered up to it (``add_generation_prompt``) to
    the end of the conversation rendered through it, trailing whitespace excluded: its content and its
    end-of-turn token, as TRL's ``{% generation %}`` training templates mark it.

    Raises:
        ValueError: the template renders a shorter conversation as something other than a prefix of the full
            one (the spans would be wrong), or the conversation has no assistant turn.
    """
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    spans = []
    for k, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        before = tokenizer.apply_chat_template(messages[:k], tokenize=False, add_generation_prompt=True)
        through = tokenizer.apply_chat_template(messages[: k + 1], tokenize=False)
        if not (text.startswith(before) and text.startswith(through)):
            raise ValueError(
                f"chat template is not prefix-preserving at message {k}; cannot locate the assistant "
                "turn (use a template with {% generation %} markers and --loss_mask trl)"
            )
        spans.append((len(before), len(through.rstrip())))
    if not spans:
        raise ValueError("conversation has no assistant turn to train on")
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    mask = [int(any(start <= begin < end for start, end in spans)) for begin, _ in encoded["offset_mapping"]]
    return list(encoded["input_ids"]), mask


def tokenize_with_labels(dataset, tokenizer, num_proc: int | None = None):
    """``messages`` rows -> ``input_ids`` + ``labels`` (``IGNORE_INDEX`` outside assistant turns)."""

    def encode(row: dict[str, Any]) -> dict[str, list[int]]:
        ids, mask = assistant_token_mask(tokenizer, row["messages"])
        return {
            "input_ids": ids,
            "labels": [t if m else IGNORE_INDEX for t, m in zip(ids, mask, strict=True)],
        }

    return dataset.map(
        encode,
        remove_columns=dataset.column_names,
        num_proc=num_proc,
        desc="Tokenizing with assistant-only labels",
    )


def prepare(train_dataset, tokenizer, args: SFTConfig, loss_mask: str):
    """Pick the masking path; returns the dataset to train on (``args.assistant_only_loss`` may be cleared when
    the labels are built here, since TRL's check expects untokenized conversations)."""
    if not args.assistant_only_loss:
        return train_dataset
    use_trl = loss_mask == "trl" or (loss_mask == "auto" and trl_supports_template(tokenizer))
    if use_trl:
        logger.info("assistant-only loss: TRL's {%% generation %%} masking")
        return train_dataset
    logger.info(
        "assistant-only loss: labels from rendered prefixes (template has no {%% generation %%} markers)"
    )
    args.assistant_only_loss = False
    return tokenize_with_labels(train_dataset, tokenizer, args.dataset_num_proc)


def main(script_args: SFTScriptArguments, args: SFTConfig, model_args: ModelConfig) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTTrainer, get_peft_config

    from trl_ext.attention_backend import apply_cudnn_attention_choice
    from trl_ext.callbacks import LogHistoryWriter, NonFiniteGradientGuard
    from trl_ext.script_input import pretrained_or_exit

    raw_dataset = load_sft_dataset(script_args)  # the cheap check first
    apply_cudnn_attention_choice(script_args.cudnn_attention)
    tokenizer = pretrained_or_exit(
        AutoTokenizer.from_pretrained, model_args.model_name_or_path, revision=model_args.model_revision
    )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    dtype = model_args.dtype if model_args.dtype in ("auto", None) else getattr(torch, model_args.dtype)
    model = pretrained_or_exit(
        AutoModelForCausalLM.from_pretrained,
        model_args.model_name_or_path,
        revision=model_args.model_revision,
        dtype=dtype,
        attn_implementation=model_args.attn_implementation,
    )
    train_dataset = prepare(raw_dataset, tokenizer, args, script_args.loss_mask)
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=train_dataset,
        processing_class=tokenizer,
        peft_config=get_peft_config(model_args),
        callbacks=[  # a NaN step skipped, not written into the weights; the loss curve, kept current
            NonFiniteGradientGuard(),
            LogHistoryWriter(Path(args.output_dir) / "log_history.json"),
        ],
    )
    resume = args.resume_from_checkpoint
    if isinstance(resume, str) and resume.lower() in ("true", "false"):
        resume = resume.lower() == "true"
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(args.output_dir)
    logger.info("saved the fine-tuned model to %s", args.output_dir)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    from trl_ext.script_input import parse_or_exit

    parser = TrlParser((SFTScriptArguments, SFTConfig, ModelConfig))
    main(*parse_or_exit(parser))
