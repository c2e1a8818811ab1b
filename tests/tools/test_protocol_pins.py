"""The pre-registered experiment's pins (``tools/protocol_session.sh``) parse in the real scripts and mean what
PROTOCOL.md's Deviations say: the judge and the attention backend of the first runs, whatever today's defaults.
A pin that does not parse would end a GPU session's run at its first command."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "protocol_session.sh"
CPU_ONLY = ["--bf16", "false", "--use_cpu", "true"]  # the GPU recipes ask for bf16, which this machine lacks


@pytest.fixture(scope="module")
def pins() -> dict[str, list[str]]:
    """The script's own assignments, run by bash up to the point where it reads its mode."""
    lines = SCRIPT.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("KEEP="))
    end = next(i for i, line in enumerate(lines) if line.startswith("mode="))
    body = "\n".join(lines[start:end])
    shown = subprocess.run(
        ["bash", "-c", body + '\nprintf "%s\\n" "$EVAL_ARGS" "$SFT_ARGS" "$PINNED_RL_ARGS"'],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout.splitlines()
    return dict(zip(("eval", "sft", "rl"), (shlex.split(line) for line in shown), strict=True))


def test_the_evaluations_run_without_the_launch_ledger(pins):
    from kernel_eval.cli import parse_config

    config, _ = parse_config(["--dataset", "d", "--model", "m", "--out", "o", *pins["eval"]])
    assert config.launch_ledger == "off"


def test_the_sft_keeps_torchs_attention_backend(pins, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import sft
    from trl import ModelConfig, SFTConfig, TrlParser

    from trl_ext.script_input import parse_or_exit

    argv = ["--config", "recipes/qwen05b_sft.yaml", "--model_name_or_path", "m", "--dataset_name", "d.jsonl"]
    script_args, *_ = parse_or_exit(
        TrlParser((sft.SFTScriptArguments, SFTConfig, ModelConfig)),
        [*argv, "--output_dir", "/tmp/protocol_pins_sft", *pins["sft"], *CPU_ONLY],
    )
    assert script_args.cudnn_attention == "keep"


def test_the_rl_runs_keep_the_first_runs_judge_and_backend(pins, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "scripts"))
    import train
    from trl import ModelConfig, TrlParser

    from trl_ext.config import MultiTurnKernelConfig
    from trl_ext.script_input import parse_or_exit

    argv = ["--config", "recipes/qwen05b_trloo.yaml", "--model_name_or_path", "m", "--dataset_name", "d"]
    script_args, config, _ = parse_or_exit(
        TrlParser((train.TrainScriptArguments, MultiTurnKernelConfig, ModelConfig)),
        [*argv, "--output_dir", "/tmp/protocol_pins_rl", *pins["rl"], *CPU_ONLY],
    )
    assert script_args.cudnn_attention == "keep"
    assert config.reward_launch_ledger is False
    assert config.reward_share_identical is False
