"""scripts/evaluate.py as a user runs it: --help, argument errors, --compare of two finished runs."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "scripts" / "evaluate.py")


def cli(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_help_lists_the_contract_options():
    done = cli("--help")
    assert done.returncode == 0
    for flag in ("--dataset", "--completions", "--model", "--adapter", "--endpoint", "--out", "--device",
                 "--levels", "--ids", "--limit", "--baseline", "--tts-rounds", "--compare"):
        assert flag in done.stdout


def test_argument_errors_are_clear(tmp_path):
    done = cli("--dataset", "d", "--out", str(tmp_path), "--completions", "c.jsonl", "--model", "m")
    assert done.returncode == 2 and "exactly one of --completions, --model, --endpoint" in done.stderr
    done = cli("--completions", "c.jsonl")
    assert done.returncode == 2 and "--dataset, --out" in done.stderr


def test_compare_two_runs(tmp_path):
    base = {"num_samples": 4, "format_rate": 1.0, "compile_rate": 0.5, "correct_rate": 0.25, "hacked_rate": 0.0,
            "mean_speedup": None, "geomean_speedup": None, "mean_reward": 0.25,
            "fast_p": {"1": None, "1.2": None, "1.5": None, "2": None},
            "best_of_history": {"correct_rate": 0.5, "mean_speedup": None, "geomean_speedup": None,
                                "fast_p": {"1": None, "1.2": None, "1.5": None, "2": None}}}
    base["per_turn"] = [dict(base, turn=1)]
    other = json.loads(json.dumps(base))
    other["correct_rate"] = 0.75
    for name, summary in (("a", base), ("b", other)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps(summary))
    done = cli("--compare", str(tmp_path / "a"), str(tmp_path / "b" / "summary.json"))
    assert done.returncode == 0, done.stderr
    assert "| correct_rate | 0.250 | 0.750 | +0.500 |" in done.stdout


def test_compile_baseline_is_refused_until_kernel_reward_offers_it():
    from kernel_reward.options import EvalOptions
    from trl_ext.evaluation.config import EvalConfig
    from trl_ext.evaluation.run import evaluator_options

    config = EvalConfig(dataset="d", out="o", completions="c.jsonl", baseline="compile", timeout=30)
    if "baseline" in EvalOptions.__dataclass_fields__:
        assert evaluator_options(config)["baseline"] == "compile"
    else:
        import pytest

        with pytest.raises(ValueError, match="no 'baseline' option"):
            evaluator_options(config)
    assert evaluator_options(EvalConfig(dataset="d", out="o", completions="c.jsonl", timeout=30)) == {"timeout_s": 30}
