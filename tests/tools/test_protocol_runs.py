"""The experiment's run records found in their folder (tools/protocol_runs.py): every finished run with its
session's SFT evaluation, incomplete ones named and left out, a run recorded twice refused."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "protocol_runs.py"
_spec = importlib.util.spec_from_file_location("protocol_runs", SCRIPT)
protocol_runs = importlib.util.module_from_spec(_spec)
sys.modules["protocol_runs"] = protocol_runs  # its dataclass looks its module up there
_spec.loader.exec_module(protocol_runs)


def _session(root: Path, name: str, arm: str, seed: int, *, evaluated: bool = True, sft: bool = True) -> Path:
    session = root / name
    run = session / f"run_{arm}_{seed}"
    run.mkdir(parents=True)
    (run / f"rl_{arm}_{seed}_log_history.json").write_text("[]")
    if evaluated:
        (run / f"eval_rl_{arm}_{seed}").mkdir()
        (run / f"eval_rl_{arm}_{seed}" / "summary.json").write_text("{}")
    if sft:
        (session / "sft" / "eval_sft").mkdir(parents=True)
        (session / "sft" / "eval_sft" / "summary.json").write_text("{}")
    return session


def test_every_finished_run_is_found_with_its_sessions_sft_evaluation(tmp_path):
    control = _session(tmp_path, "2026-12-07-h100-control-0", "control", 0)
    trloo = _session(tmp_path, "2026-12-07-h100-trloo-0", "trloo", 0)
    (tmp_path / "2026-12-06-h100" / "sft").mkdir(parents=True)  # a session that trained no run
    found, skipped = protocol_runs.find_runs(tmp_path)
    assert skipped == []
    assert [(run.arm, run.seed) for run in found] == [("trloo", 0), ("control", 0)]
    first = found[1]
    assert first.summary == control / "run_control_0" / "eval_rl_control_0" / "summary.json"
    assert first.sft_summary == control / "sft" / "eval_sft" / "summary.json"
    assert first.log_history == control / "run_control_0" / "rl_control_0_log_history.json"
    assert found[0].folder == trloo / "run_trloo_0"


def test_an_incomplete_run_is_named_and_left_out(tmp_path):
    _session(tmp_path, "a", "trloo", 1, evaluated=False)
    _session(tmp_path, "b", "control", 1, sft=False)
    found, skipped = protocol_runs.find_runs(tmp_path)
    assert found == []
    assert [why for _, why in skipped] == ["no test-set summary", "no SFT summary in its session"]


def test_a_run_recorded_twice_or_an_unknown_arm_is_refused(tmp_path):
    _session(tmp_path, "a", "trloo", 2)
    _session(tmp_path, "b", "trloo", 2)
    with pytest.raises(ValueError, match="trloo seed 2 is recorded twice"):
        protocol_runs.find_runs(tmp_path)
    _session(tmp_path / "other", "c", "grpo", 0)
    with pytest.raises(ValueError, match="unknown arm 'grpo'"):
        protocol_runs.find_runs(tmp_path / "other")
    with pytest.raises(ValueError, match="no such folder"):
        protocol_runs.find_runs(tmp_path / "missing")
