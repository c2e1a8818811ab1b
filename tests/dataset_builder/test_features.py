"""FEATURES, ops parsing and the first-turn prompt template."""

import json

import pytest
from datasets import List, Value

from dataset_builder import FEATURES, render_first_turn, to_upstream_row
from dataset_builder.features import ARROW_SCHEMA, OpsFormatError, parse_ops
from dataset_builder.prompt import REFERENCE_MARKER, PromptTemplateError, first_turn_messages, load_template


def test_features_match_the_contract():
    assert list(FEATURES) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    assert FEATURES["prompt"] == List({"role": Value("string"), "content": Value("string")})
    assert FEATURES["reward_model"] == {"style": Value("string"), "ground_truth": Value("string")}
    extra = FEATURES["extra_info"]
    assert sorted(extra) == sorted(
        ["entry_point", "level", "module_name", "ops", "original_prompt", "repo_name", "type", "uuid"]
    )
    assert extra["ops"] == List(Value("string"))
    assert extra["level"] == Value("string")
    assert str(ARROW_SCHEMA.field("extra_info").type.field("ops").type) == "list<item: string>"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["torch.abs", "nn.Conv2d"]', ["torch.abs", "nn.Conv2d"]),
        ('[ "torch.abs" ,"nn.Conv2d" ]', ["torch.abs", "nn.Conv2d"]),
        (["torch.abs"], ["torch.abs"]),
        ("[]", []),
        ("", []),
        (None, []),
    ],
)
def test_parse_ops_accepts_lists_and_upstream_json(value, expected):
    assert parse_ops(value) == expected


@pytest.mark.parametrize("value", ["[torch.abs", '{"a": 1}', "[1, 2]", 3])
def test_parse_ops_rejects_other_values(value):
    with pytest.raises(OpsFormatError):
        parse_ops(value)


def test_to_upstream_row_encodes_ops_back_to_json():
    row = {"extra_info": {"ops": ["torch.abs", "nn.Conv2d"], "uuid": "x"}, "data_source": "d"}
    back = to_upstream_row(row)
    assert back["extra_info"]["ops"] == '["torch.abs", "nn.Conv2d"]'
    assert json.loads(back["extra_info"]["ops"]) == row["extra_info"]["ops"]
    assert row["extra_info"]["ops"] == ["torch.abs", "nn.Conv2d"]  # input untouched


def test_first_turn_prompt_has_the_facts_structure():
    ref = "import torch\nclass Model: pass\n# braces {stay} literal {{x}}\n"
    prompt = render_first_turn(ref)
    assert ref.rstrip("\n") in prompt
    assert REFERENCE_MARKER not in prompt
    # worked add example: kernel with masked load/store, constexpr block, host wrapper with grid, ModelNew
    for needle in (
        "@triton.jit",
        "tl.load(",
        "mask=mask",
        "tl.store(",
        "BLOCK_SIZE: tl.constexpr",
        "grid = (",
        "class ModelNew",
        "def get_init_inputs",
    ):
        assert needle in prompt, needle
    assert prompt.index("class ModelNew") < prompt.index(ref.rstrip("\n"))  # example first, then the task
    assert "ModelNew" in prompt[prompt.index(ref.rstrip("\n")) :]  # the closing instructions name the class
    messages = first_turn_messages(ref)
    assert messages == [{"role": "user", "content": prompt}]


def test_template_override_from_a_file(tmp_path):
    custom = tmp_path / "t.txt"
    custom.write_text(f"Optimise this:\n{REFERENCE_MARKER}\nEnd.", encoding="utf-8")
    assert render_first_turn("CODE", str(custom)) == "Optimise this:\nCODE\nEnd."
    template = load_template(str(custom))
    assert template.version.startswith("custom-") and template.version != load_template().version
    assert load_template().version == "v1"


def test_bad_templates_are_rejected_with_the_file_named(tmp_path):
    twice = tmp_path / "twice.txt"
    twice.write_text(f"{REFERENCE_MARKER} {REFERENCE_MARKER}", encoding="utf-8")
    with pytest.raises(PromptTemplateError, match="twice.txt.*found 2 times"):
        load_template(str(twice))
    with pytest.raises(PromptTemplateError, match="missing.txt"):
        load_template(str(tmp_path / "missing.txt"))


def test_prompt_and_tasks_import_without_datasets():
    """The GPU machine has no `datasets`: trainers and evaluation import the prompt and tasks from there."""
    import subprocess
    import sys

    code = "import sys, dataset_builder.prompt, dataset_builder.tasks; assert 'datasets' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120).returncode == 0
