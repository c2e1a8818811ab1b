"""scripts/train.py smoke runs: --help, a toy-environment run that checkpoints, and a resume from it."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "train.py"


def run(args, tmp_path):
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def toy_run(model_dir: Path, out: Path, max_turns: int) -> list[str]:
    """Arguments of a tiny toy-environment run on the CPU (4 samples of one prompt, 4-token turns)."""
    return [
        "--model_name_or_path", str(model_dir), "--environment", "toy", "--toy_tasks", "8",
        "--output_dir", str(out), "--use_cpu", "true", "--bf16", "false",
        "--per_device_train_batch_size", "4", "--num_generations", "4", "--max_completion_length", "4",
        "--max_turns", str(max_turns),
    ]  # fmt: skip


def test_help_lists_multi_turn_options(tmp_path):
    proc = run(["--help"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for option in (
        "--max_turns",
        "--advantage_estimator",
        "--use_mrs",
        "--use_prs",
        "--environment",
        "--use_peft",
    ):
        assert option in proc.stdout


def test_toy_run_checkpoints_and_resumes(tmp_path):
    from trl_ext.tiny_model import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "tiny")
    common = toy_run(model_dir, tmp_path / "out", max_turns=2) + [
        "--save_strategy",
        "steps",
        "--save_steps",
        "2",
        "--report_to",
        "none",
        "--logging_steps",
        "1",
        "--use_peft",
        "true",
        "--lora_r",
        "4",
        "--lora_dropout",
        "0",
        "--lora_target_modules",
        "q_proj",
        "v_proj",
        "--use_mrs",
        "true",
    ]
    first = run([*common, "--max_steps", "2"], tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (tmp_path / "out" / "checkpoint-2").is_dir()
    assert (tmp_path / "out" / "adapter_model.safetensors").is_file()  # LoRA adapter saved at the end
    second = run([*common, "--max_steps", "3", "--resume_from_checkpoint", "true"], tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    state = json.loads((tmp_path / "out" / "checkpoint-3" / "trainer_state.json").read_text())
    assert state["global_step"] == 3
    steps_logged = [h["step"] for h in state["log_history"] if "turn_1/reward" in h]
    assert 3 in steps_logged


def test_mrs_with_lora_dropout_is_refused(tmp_path):
    proc = run(
        [
            "--model_name_or_path",
            "unused",
            "--environment",
            "toy",
            "--output_dir",
            str(tmp_path / "o"),
            "--use_cpu",
            "true",
            "--bf16",
            "false",
            "--use_peft",
            "true",
            "--lora_dropout",
            "0.05",
            "--use_mrs",
            "true",
            "--report_to",
            "none",
        ],
        tmp_path,
    )
    assert proc.returncode != 0 and "lora_dropout" in proc.stderr


def test_a_probe_dataset_is_evaluated_during_training(tmp_path):
    """--probe_dataset: its first rows are TRL's eval set, evaluated every --eval_steps; the eval metrics reach
    log_history.json. Without an eval strategy it is refused in one line."""
    from datasets import Dataset

    from trl_ext.env import make_toy_tasks
    from trl_ext.tiny_model import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "tiny")
    probe = tmp_path / "probe"
    probe.mkdir()
    Dataset.from_list(make_toy_tasks(3, seed=7)).to_json(probe / "train.jsonl")
    common = toy_run(model_dir, tmp_path / "out", max_turns=1)
    common += ["--report_to", "none", "--logging_steps", "1", "--save_strategy", "no", "--max_steps", "2"]
    common += ["--probe_dataset", str(probe), "--probe_tasks", "2"]
    refused = run(common, tmp_path)
    assert refused.returncode == 2 and refused.stderr.strip().splitlines()[-1].startswith(
        "error: --probe_dataset is evaluated as TRL's eval set"
    ), refused.stderr[-2000:]
    probed = run(
        [*common, "--eval_strategy", "steps", "--eval_steps", "1", "--num_generations_eval", "2"]
        + ["--per_device_eval_batch_size", "4"],
        tmp_path,
    )
    assert probed.returncode == 0, probed.stderr[-3000:]
    history = json.loads((tmp_path / "out" / "log_history.json").read_text())
    probe_steps = [entry["step"] for entry in history if "eval_turn_1/correct" in entry]
    assert probe_steps == [1, 2], history


def test_a_training_set_smaller_than_one_generation_batch_is_refused(tmp_path):
    """Fewer rows than the prompts of one generation batch would train for no step at all: one line, exit 2."""
    from trl_ext.tiny_model import save_tiny_model

    model_dir = save_tiny_model(tmp_path / "tiny")
    args = toy_run(model_dir, tmp_path / "out", max_turns=1) + ["--report_to", "none", "--max_steps", "1"]
    args[args.index("--toy_tasks") + 1] = "1"
    args[args.index("--per_device_train_batch_size") + 1] = "8"  # 2 prompts x 4 samples a step
    proc = run(args, tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "error: the training set has 1 rows, fewer than the 2 prompts one generation batch samples"
        )
    )
