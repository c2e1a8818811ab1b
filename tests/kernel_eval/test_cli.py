"""scripts/evaluate.py as a user runs it (--help in a subprocess), argument errors and --compare in-process."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_eval.cli import main

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "scripts" / "evaluate.py")


def cli(*args):
    return subprocess.run(
        [sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )


def test_help_lists_the_contract_options():
    done = cli("--help")
    assert done.returncode == 0
    for flag in (
        "--dataset",
        "--completions",
        "--model",
        "--adapter",
        "--endpoint",
        "--out",
        "--device",
        "--levels",
        "--ids",
        "--limit",
        "--baseline",
        "--tts-rounds",
        "--compare",
    ):
        assert flag in done.stdout


def test_argument_errors_are_clear(tmp_path, capsys):
    # In-process (the script itself is smoke-tested by --help above): parse errors exit 2 with a message.
    for argv, message in [
        (
            ["--dataset", "d", "--out", str(tmp_path), "--completions", "c.jsonl", "--model", "m"],
            "exactly one of --completions, --model, --endpoint",
        ),
        (["--completions", "c.jsonl"], "--dataset, --out"),
        (["--dataset", "d", "--out", "o", "--model", "m", "--num-turns", "0"], "--num-turns must be >= 1"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_compare_two_runs(tmp_path, capsys):
    base = {
        "num_samples": 4,
        "format_rate": 1.0,
        "compile_rate": 0.5,
        "correct_rate": 0.25,
        "hacked_rate": 0.0,
        "mean_speedup": None,
        "geomean_speedup": None,
        "mean_reward": 0.25,
        "fast_p": {"1": None, "1.2": None, "1.5": None, "2": None},
        "best_of_history": {
            "correct_rate": 0.5,
            "mean_speedup": None,
            "geomean_speedup": None,
            "fast_p": {"1": None, "1.2": None, "1.5": None, "2": None},
        },
    }
    base["per_turn"] = [dict(base, turn=1)]
    other = json.loads(json.dumps(base))
    other["correct_rate"] = 0.75
    for name, summary in (("a", base), ("b", other)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(summary))
    assert main(["--compare", str(tmp_path / "a"), str(tmp_path / "b" / "summary.json")]) == 0
    assert "| correct_rate | 0.250 | 0.750 | +0.500 |" in capsys.readouterr().out


def test_baseline_reaches_kernel_reward_options():
    from kernel_eval.config import EvalConfig
    from kernel_eval.run import evaluator_options
    from kernel_reward.options import EvalOptions

    config = EvalConfig(dataset="d", out="o", completions="c.jsonl", baseline="compile", timeout=30)
    options = evaluator_options(config)
    assert options == {"baseline": "compile", "timeout_s": 30}
    assert EvalOptions(**options).baseline == "compile"
    default = evaluator_options(EvalConfig(dataset="d", out="o", completions="c.jsonl", timeout=30))
    assert default == {"baseline": "eager", "timeout_s": 30}
    with pytest.raises(ValueError, match="baseline must be one of"):
        EvalOptions(baseline="inductor")


def test_model_only_options_are_rejected_with_saved_completions():
    from kernel_eval.config import EvalConfig

    with pytest.raises(ValueError, match="--num-samples, --tts-rounds: only for model runs"):
        EvalConfig(dataset="d", out="o", completions="c.jsonl", num_samples=8, tts_rounds=2)


def test_the_launch_ledger_switch_reaches_the_pool_and_the_resume_cache_key():
    """``--launch-ledger auto`` (default) leaves the pool's default (on for a GPU); ``on`` / ``off`` set it, and
    the setting is part of what a resumed run must match (it can change verdicts)."""
    from kernel_eval.cli import build_parser
    from kernel_eval.config import EvalConfig
    from kernel_eval.run import evaluator_settings, pool_options

    argv = ["--dataset", "d", "--out", "o", "--completions", "c.jsonl"]
    assert build_parser().parse_args(argv).launch_ledger == "auto"
    assert pool_options(EvalConfig(dataset="d", out="o", completions="c.jsonl")) == {}
    for word, value in (("on", True), ("off", False)):
        config = EvalConfig(dataset="d", out="o", completions="c.jsonl", launch_ledger=word)
        assert build_parser().parse_args([*argv, "--launch-ledger", word]).launch_ledger == word
        assert pool_options(config) == {"launch_ledger": value}
        assert evaluator_settings(config)["pool_options"] == {"launch_ledger": value}
    with pytest.raises(SystemExit):
        build_parser().parse_args([*argv, "--launch-ledger", "maybe"])
