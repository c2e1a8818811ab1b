"""scripts/sft.py: the assistant-only loss mask (against TRL's own {% generation %} masking as the oracle) and a
subprocess smoke run of a few optimizer steps on the tiny model, whose parameters must change."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "sft.py"

# The tiny model's ChatML template with TRL-style generation markers: assistant content + <|im_end|> are trained.
# (transformers renders with trim_blocks, so a newline right after a block tag is written as {{ '\n' }}.)
MARKED_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] }}<|im_end|>{% endgeneration %}"
    "{{ '\\n' }}{% else %}{{ message['content'] }}<|im_end|>{{ '\\n' }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

CONVERSATION = [
    {
        "role": "user",
        "content": "Write a Triton kernel for a + b.\n```python\nclass Model(nn.Module): pass\n```",
    },
    {
        "role": "assistant",
        "content": "A masked add.\n\n```python\n@triton.jit\ndef add_kernel(x_ptr):\n    pass\n```",
    },
    {"role": "user", "content": 'Server feedback (status/metrics/errors):\n{\n  "status": "incorrect"\n}'},
    {
        "role": "assistant",
        "content": "Fixed the mask.\n\n```python\nclass ModelNew(nn.Module):\n    pass\n```",
    },
]


def load_script():
    """scripts/sft.py as a module (registered first: its dataclasses resolve annotations through sys.modules)."""
    if "sft_script" not in sys.modules:
        spec = importlib.util.spec_from_file_location("sft_script", SCRIPT)
        module = importlib.util.module_from_spec(spec)
        sys.modules["sft_script"] = module
        spec.loader.exec_module(module)
    return sys.modules["sft_script"]


@pytest.fixture(scope="module")
def tokenizer():
    from trl_ext.tiny_model import build_tokenizer

    return build_tokenizer()


def test_offset_mask_covers_exactly_the_assistant_turns(tokenizer):
    sft = load_script()
    ids, mask = sft.assistant_token_mask(tokenizer, CONVERSATION)
    assert len(ids) == len(mask) and 0 < sum(mask) < len(mask)
    trained = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    expected = "".join(m["content"] + "<|im_end|>" for m in CONVERSATION if m["role"] == "assistant")
    assert trained == expected
    untrained = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
    assert "Server feedback" in untrained and "Fixed the mask" not in untrained


def test_offset_mask_matches_trls_generation_marker_mask(tokenizer):
    """The oracle: transformers' own assistant mask from a template with {% generation %} markers."""
    sft = load_script()
    ids, mask = sft.assistant_token_mask(tokenizer, CONVERSATION)
    marked = tokenizer.apply_chat_template(
        CONVERSATION,
        chat_template=MARKED_TEMPLATE,
        tokenize=True,
        return_dict=True,
        return_assistant_tokens_mask=True,
    )
    assert list(marked["input_ids"]) == ids
    assert list(marked["assistant_masks"]) == mask


def test_auto_picks_trl_for_marked_templates_and_offsets_otherwise(tokenizer):
    from datasets import Dataset
    from trl import SFTConfig

    sft = load_script()
    assert not sft.trl_supports_template(tokenizer)  # plain ChatML: TRL has no training template for it
    data = Dataset.from_list([{"messages": CONVERSATION}])
    args = SFTConfig(output_dir="unused", assistant_only_loss=True, use_cpu=True, report_to="none")
    prepared = sft.prepare(data, tokenizer, args, "auto")
    assert prepared.column_names == ["input_ids", "labels"] and args.assistant_only_loss is False
    labels = prepared[0]["labels"]
    assert -100 in labels and any(label != -100 for label in labels)

    tokenizer_marked = _copy_with_template(tokenizer, MARKED_TEMPLATE)
    assert sft.trl_supports_template(tokenizer_marked)
    args = SFTConfig(output_dir="unused", assistant_only_loss=True, use_cpu=True, report_to="none")
    assert sft.prepare(data, tokenizer_marked, args, "auto") is data and args.assistant_only_loss is True


def _copy_with_template(tokenizer, template):
    import copy

    clone = copy.deepcopy(tokenizer)
    clone.chat_template = template
    return clone


def test_sft_runs_steps_and_changes_parameters(tmp_path):
    """Three optimizer steps on verified-looking trajectories (tiny model, CPU), loss on assistant turns only."""
    import torch
    from transformers import AutoModelForCausalLM

    from trl_ext.tiny_model import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "tiny")
    rows = [
        {"messages": CONVERSATION, "kind": "multi_turn"},
        {"messages": CONVERSATION[:2], "kind": "single_turn"},
    ]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows * 3))
    config = tmp_path / "sft.yaml"
    config.write_text(
        (ROOT / "recipes" / "tiny_cpu_sft.yaml")
        .read_text()
        .replace("runs/tiny-model", str(model_dir))
        .replace("runs/sft-data/train.jsonl", str(data))
        .replace("runs/tiny-sft", str(tmp_path / "out"))
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--config", str(config), "--max_steps", "3"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "labels from rendered prefixes" in proc.stderr
    before = AutoModelForCausalLM.from_pretrained(model_dir)
    after = AutoModelForCausalLM.from_pretrained(tmp_path / "out")
    changed = [
        name
        for (name, p), (_, q) in zip(before.named_parameters(), after.named_parameters(), strict=True)
        if not torch.equal(p, q)
    ]
    assert changed, "no parameter changed after 3 SFT steps"
    assert "'train_loss'" in proc.stdout + proc.stderr or "train_loss" in proc.stdout + proc.stderr


def test_help_lists_options(tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for option in ("--loss_mask", "--assistant_only_loss", "--use_peft", "--dataset_name", "--kinds"):
        assert option in proc.stdout


def test_trainer_keeps_the_assistant_only_labels(tokenizer):
    """What SFTTrainer will train on: our labels pass through its dataset preparation unchanged."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from trl_ext.tiny_model import build_model

    sft = load_script()
    args = SFTConfig(
        output_dir="unused", assistant_only_loss=True, use_cpu=True, report_to="none", max_length=None
    )
    data = sft.prepare(Dataset.from_list([{"messages": CONVERSATION}]), tokenizer, args, "auto")
    trainer = SFTTrainer(
        model=build_model(tokenizer), args=args, train_dataset=data, processing_class=tokenizer
    )
    row = trainer.train_dataset[0]
    trained = tokenizer.decode([label for label in row["labels"] if label != -100])
    assert trained == "".join(m["content"] + "<|im_end|>" for m in CONVERSATION if m["role"] == "assistant")
