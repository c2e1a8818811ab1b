"""The shipped GPU recipes (recipes/*.yaml) checked on CPU with tiny models: each is a valid config, takes one
optimizer step per rollout batch, and its dtype / learning rate / optimizer settings actually move the weights."""

import importlib.util
import sys
from dataclasses import fields
from pathlib import Path

import pytest
import torch
import yaml

pytest.importorskip("trl")

from trl import ModelConfig  # noqa: E402

from trl_ext import MultiTurnKernelConfig  # noqa: E402

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
GPU_RECIPES = ["qwen3_8b_trloo.yaml", "qwen3_14b_trloo.yaml", "one_gpu_lora.yaml", "qwen05b_trloo.yaml"]
FULL_FINETUNE_RECIPES = ["qwen3_8b_trloo.yaml", "qwen3_14b_trloo.yaml"]
# What a CPU box needs changed; every other setting (dtype, bf16, lr, optimizer, schedule...) is the recipe's own.
CPU_OVERRIDES = dict(use_cpu=True, use_vllm=False, report_to="none", save_strategy="no")


def recipe_configs(name: str, tmp_path, **overrides) -> tuple[MultiTurnKernelConfig, ModelConfig]:
    """The recipe's MultiTurnKernelConfig and ModelConfig, as TrlParser would build them from the YAML."""
    values = yaml.safe_load((RECIPES / name).read_text())
    train_fields = {f.name for f in fields(MultiTurnKernelConfig) if f.init}
    model_fields = {f.name for f in fields(ModelConfig) if f.init}
    train = {k: v for k, v in values.items() if k in train_fields}
    train.update(CPU_OVERRIDES, output_dir=str(tmp_path / "out"), **overrides)
    model = {k: v for k, v in values.items() if k in model_fields}
    return MultiTurnKernelConfig(**train), ModelConfig(**model)


@pytest.mark.parametrize("name", GPU_RECIPES)
def test_recipe_takes_one_optimizer_step_per_rollout_batch(name, tmp_path):
    args, _ = recipe_configs(name, tmp_path)
    assert args.steps_per_generation == args.gradient_accumulation_steps, name
    assert args.num_iterations == 1
    assert args.disable_dropout and args.use_mrs  # MRS needs dropout off; the config turns it off by default


def tiny_qwen3(tmp_path, dtype: str | None) -> torch.nn.Module:
    """A 2-layer Qwen3 (untied head, like Qwen3-8B/14B) saved in fp32 and loaded the way scripts/train.py does."""
    from transformers import AutoModelForCausalLM, Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=64,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        tie_word_embeddings=False,
    )
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).save_pretrained(tmp_path / "tiny")
    torch_dtype = dtype if dtype in ("auto", None) else getattr(torch, dtype)
    return AutoModelForCausalLM.from_pretrained(tmp_path / "tiny", dtype=torch_dtype)


@pytest.mark.parametrize("name", FULL_FINETUNE_RECIPES)
def test_recipe_precision_and_lr_change_most_weights_in_one_step(name, tmp_path):
    """One Trainer step with the recipe's dtype, bf16 autocast, lr and optimizer must move most trainable weights
    (with bf16 weights and plain AdamW at lr 1e-6, almost every update rounds away)."""
    from datasets import Dataset
    from transformers import Trainer

    args, model_args = recipe_configs(
        name,
        tmp_path,
        max_steps=1,
        per_device_train_batch_size=4,
        gradient_accumulation_steps=1,
        steps_per_generation=1,
        num_generations=2,
    )
    assert args.learning_rate <= 1e-6  # the paper's lr: the regime where rounding bites
    model = tiny_qwen3(tmp_path, model_args.dtype)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 64, (8, 48), generator=generator)
    data = Dataset.from_dict({"input_ids": ids.tolist(), "labels": ids.tolist()})
    trainer = Trainer(model=model, args=args, train_dataset=data)
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    trainer.train()
    changed = sum(int((p.detach() != before[n]).sum()) for n, p in model.named_parameters() if n in before)
    total = sum(t.numel() for t in before.values())
    assert changed / total > 0.9, f"{name}: one step changed {changed / total:.1%} of the trainable weights"


@pytest.mark.parametrize("name", GPU_RECIPES)
def test_gpu_recipes_train_against_the_strict_reward(name, tmp_path, monkeypatch):
    """Strict mode (a correct candidate under the coverage floor is hacked) and the failing resized-input check (a
    kernel with a torch fallback at other sizes is incorrect) are on in every GPU recipe, and the training script
    hands both to the evaluator."""
    import importlib.util
    import sys

    import kernel_reward.env

    args, _ = recipe_configs(name, tmp_path)
    assert args.reward_min_coverage == 0.3
    spec = importlib.util.spec_from_file_location("train_script", RECIPES.parent / "scripts" / "train.py")
    train = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "train_script", train)  # dataclasses look their module up there
    spec.loader.exec_module(train)
    seen = {}
    monkeypatch.setattr(kernel_reward.env, "KernelEnvironment", lambda **kwargs: seen.update(kwargs) or "env")
    assert train.make_environment(train.TrainScriptArguments(dataset_name="x"), args) == "env"
    assert seen["min_coverage"] == 0.3 and seen["reward_scheme"] == args.reward_scheme
    assert args.reward_shape_check == "fail" and seen["shape_check"] == "fail"
    assert seen["stop_on_correct"] is args.stop_on_correct
    assert seen["speedup_estimate"] == args.reward_speedup_estimate == "lower"
    # identical completions of a step are judged once (the pre-registered experiment pins this off)
    assert args.reward_share_identical is True and seen["share_identical"] is True
    # each rank of a multi-process launch judges on its own GPU, not on every GPU of the host
    assert train.rank_reward_device("cuda", {"WORLD_SIZE": "4", "LOCAL_RANK": "2"}) == "cuda:2"
    assert train.rank_reward_device(None, {"WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == "cuda:1"
    assert (
        train.rank_reward_device("cuda", {}) == "cuda"
        and train.rank_reward_device("cpu", {"WORLD_SIZE": "2"}) == "cpu"
    )
    assert train.rank_reward_device("cuda:5", {"WORLD_SIZE": "2", "LOCAL_RANK": "0"}) == "cuda:5"
    if args.max_turns > 1:  # a multi-turn recipe says whether turns are ragged, rather than inheriting it
        assert "stop_on_correct:" in (RECIPES / name).read_text()


def test_the_coverage_floor_must_be_a_fraction(tmp_path):
    with pytest.raises(ValueError, match="reward_min_coverage must be in \\[0, 1\\]"):
        recipe_configs("one_gpu_lora.yaml", tmp_path, reward_min_coverage=30)


@pytest.mark.parametrize("name", GPU_RECIPES)
def test_the_runners_coverage_number_earns_no_reward_in_the_gpu_recipes(name, tmp_path):
    """Coverage is measured in the candidate's process (docs/security.md): under a GPU recipe a correct candidate
    reporting full coverage is paid exactly what it is paid at the coverage floor."""
    from kernel_reward.reward import compute_reward

    args, _ = recipe_configs(name, tmp_path)
    paid = {
        coverage: compute_reward(
            args.reward_scheme,
            status="correct",
            speedup=1.5,
            coverage=coverage,
            hacked=False,
            params=args.reward_params(),
        ).reward
        for coverage in (0.3, 1.0)
    }
    assert paid[0.3] == paid[1.0], (name, paid)


def load_train_script(monkeypatch):
    """scripts/train.py as a module (it is a script, not a package module)."""
    spec = importlib.util.spec_from_file_location("train_script", RECIPES.parent / "scripts" / "train.py")
    train = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "train_script", train)  # dataclasses look their module up there
    spec.loader.exec_module(train)
    return train


def test_reward_pool_size_and_memory_share_reach_the_evaluator(tmp_path, monkeypatch):
    """Two trainers side by side on one GPU each start a reward pool that reads the same free memory: the config
    caps each pool's workers and memory share, and the training script hands both to the evaluator."""
    train = load_train_script(monkeypatch)
    args, _ = recipe_configs("qwen05b_trloo.yaml", tmp_path)
    assert train.reward_pool_options(args) == {}  # unset: the pool sizes itself from the GPU it finds
    args, _ = recipe_configs("qwen05b_trloo.yaml", tmp_path, reward_workers=3, reward_memory_fraction=0.2)
    assert train.reward_pool_options(args) == {"workers": 3, "pool_options": {"usable_memory_fraction": 0.2}}
    import kernel_reward.evaluator
    from kernel_reward import ServiceConfig

    seen = {}
    monkeypatch.setattr(
        kernel_reward.evaluator, "Evaluator", lambda **kwargs: seen.update(kwargs) or "evaluator"
    )
    env = train.make_environment(train.TrainScriptArguments(dataset_name="x"), args)
    assert env.evaluator == "evaluator" and seen["workers"] == 3
    pool = ServiceConfig(workers=seen["workers"], pool_options=seen["pool_options"]).for_device("cpu")
    assert pool.workers == 3 and pool.usable_memory_fraction == 0.2 and pool.launch_ledger is None  # GPU: on
    for asked in (True, False):  # set, the ledger is the config's; unset, the pool's default decides
        args, _ = recipe_configs("qwen05b_trloo.yaml", tmp_path, reward_launch_ledger=asked)
        assert train.reward_pool_options(args) == {"pool_options": {"launch_ledger": asked}}
    assert ServiceConfig(pool_options={"launch_ledger": True}).for_device("cpu").launch_ledger
    with pytest.raises(ValueError, match="reward_memory_fraction must be in"):
        recipe_configs("qwen05b_trloo.yaml", tmp_path, reward_memory_fraction=1.5)
    with pytest.raises(ValueError, match="reward_workers must be"):
        recipe_configs("qwen05b_trloo.yaml", tmp_path, reward_workers=0)


def test_the_launch_ledger_switch_parses_from_the_command_line(tmp_path, monkeypatch):
    """``reward_launch_ledger`` has three states on the command line: absent (the pool's default: on for a GPU),
    ``--reward_launch_ledger false`` (off, as the pre-registered experiment pins it) and ``true``."""
    from transformers import HfArgumentParser

    train = load_train_script(monkeypatch)

    parser = HfArgumentParser(MultiTurnKernelConfig)
    base = ["--output_dir", str(tmp_path), "--use_cpu", "true", "--report_to", "none"]
    for given, expected in (
        ([], None),
        (["--reward_launch_ledger", "false"], False),
        (["--reward_launch_ledger", "true"], True),
    ):
        (args,) = parser.parse_args_into_dataclasses([*base, *given])
        assert args.reward_launch_ledger is expected
        assert train.reward_pool_options(args).get("pool_options", {}).get("launch_ledger") is expected


def test_the_shared_results_switch_parses_from_the_command_line(tmp_path, monkeypatch):
    """``--reward_share_identical false`` (as the pre-registered experiment pins it) reaches the environment."""
    from transformers import HfArgumentParser

    import kernel_reward.env

    train = load_train_script(monkeypatch)
    parser = HfArgumentParser(MultiTurnKernelConfig)
    base = ["--output_dir", str(tmp_path), "--use_cpu", "true", "--report_to", "none"]
    seen = {}
    monkeypatch.setattr(kernel_reward.env, "KernelEnvironment", lambda **kwargs: seen.update(kwargs) or "env")
    for given, expected in (([], True), (["--reward_share_identical", "false"], False)):
        (args,) = parser.parse_args_into_dataclasses([*base, *given])
        train.make_environment(train.TrainScriptArguments(dataset_name="x"), args)
        assert args.reward_share_identical is expected and seen["share_identical"] is expected
