"""The pre-registered decision rule (tools/protocol_decision.py): each criterion can fail on its own, and the
command applies it to evaluation summaries."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from kernel_eval.paired import PairedDifference

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "protocol_decision.py"
_spec = importlib.util.spec_from_file_location("protocol_decision", SCRIPT)
protocol_decision = importlib.util.module_from_spec(_spec)
sys.modules["protocol_decision"] = protocol_decision  # its dataclass looks its module up there
_spec.loader.exec_module(protocol_decision)
decide, main = protocol_decision.decide, protocol_decision.main


def gain(difference: float, low: float) -> PairedDifference:
    return PairedDifference(
        "correct_rate", 48, 0.1, 0.1 + difference, difference, low, difference + 0.05, 0.95, 10_000
    )


PASSING = {
    ("trloo", 0): gain(0.08, 0.02),
    ("trloo", 1): gain(0.06, 0.01),
    ("trloo", 2): gain(0.07, 0.03),
    ("control", 0): gain(0.01, -0.04),
    ("control", 1): gain(-0.01, -0.06),
    ("control", 2): gain(0.0, -0.05),
}
SPREAD = {
    "trloo": {"a": 0.1, "b": 0.05, "c": 0.04, "d": 0.0},
    "control": {"a": 0.0, "b": 0.01, "c": 0.0, "d": 0.02},
}


def test_learning_is_claimed_only_when_all_four_criteria_hold():
    decision = decide(PASSING, SPREAD)
    assert decision.learning_claimed and decision.computations_won == ["a", "b", "c"]
    one_seed_unsure = {**PASSING, ("trloo", 1): gain(0.06, -0.01)}
    assert not decide(one_seed_unsure, SPREAD).every_trloo_interval_above_zero
    control_overlaps = {**PASSING, ("control", 2): gain(0.065, 0.0)}
    assert not decide(control_overlaps, SPREAD).every_trloo_above_every_control
    control_moves = {**PASSING, ("control", 0): gain(0.05, 0.01), ("control", 1): gain(0.04, 0.0)}
    assert not decide(control_moves, SPREAD).mean_gains_in_band  # mean control +0.03
    small = {key: gain(0.04, 0.01) if key[0] == "trloo" else d for key, d in PASSING.items()}
    assert not decide(small, SPREAD).mean_gains_in_band  # mean TRLOO +0.04
    narrow = {**SPREAD, "trloo": {"a": 0.2, "b": 0.0, "c": 0.0, "d": 0.0}}
    assert not decide(PASSING, narrow).spread_over_computations
    for failing in (one_seed_unsure, control_overlaps, control_moves, small):
        assert not decide(failing, SPREAD).learning_claimed
    assert not decide(PASSING, narrow).learning_claimed
    with pytest.raises(ValueError, match="each arm"):
        decide({k: d for k, d in PASSING.items() if k[0] == "trloo"}, SPREAD)
    with pytest.raises(ValueError, match="unknown arms"):
        decide({**PASSING, ("grpo", 0): gain(0.1, 0.05)}, SPREAD)


def test_the_command_reads_summaries_and_writes_its_decision(tmp_path, capsys):
    tasks = [f"t{i}" for i in range(8)]
    (tmp_path / "test").mkdir()
    novelty = [{"uuid": t, "computation": "abcd"[i % 4]} for i, t in enumerate(tasks)]
    (tmp_path / "test" / "novelty.json").write_text(json.dumps(novelty))

    def summary(name, rates):
        path = tmp_path / f"{name}.json"
        path.write_text(
            json.dumps({"per_task": {t: {"correct_rate": r} for t, r in zip(tasks, rates, strict=True)}})
        )
        return str(path)

    sft = summary("sft", [0.0, 0.25, 0.5, 0.0, 0.25, 0.0, 0.5, 0.0])
    rl = summary("rl", [0.5, 0.5, 0.75, 0.25, 0.5, 0.25, 0.75, 0.25])
    ctl = summary("ctl", [0.0, 0.25, 0.5, 0.0, 0.25, 0.0, 0.5, 0.0])
    argv = ["--tasks", str(tmp_path / "test"), "--out", str(tmp_path / "result")]
    assert main([*argv, "--run", "trloo", "0", rl, sft, "--run", "control", "0", ctl, sft]) == 0
    printed = capsys.readouterr().out
    assert "trloo | 0 | 0.188 | 0.469 | +0.281" in printed and "learning claimed: True" in printed
    record = json.loads((tmp_path / "result" / "decision.json").read_text())
    assert record["decision"]["computations_won"] == ["a", "b", "c", "d"]


def test_each_run_is_paired_with_its_own_sessions_sft_evaluation(tmp_path, capsys):
    tasks = ["t0", "t1"]
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "novelty.json").write_text(
        json.dumps([{"uuid": t, "computation": "a"} for t in tasks])
    )

    def summary(name, rates):
        path = tmp_path / f"{name}.json"
        path.write_text(
            json.dumps({"per_task": dict(zip(tasks, [{"correct_rate": r} for r in rates], strict=False))})
        )
        return str(path)

    low_sft, high_sft, rl = summary("s1", [0.0, 0.0]), summary("s2", [0.5, 0.5]), summary("rl", [0.5, 0.5])
    argv = ["--tasks", str(tmp_path / "test"), "--run", "control", "0", rl, high_sft]
    main([*argv, "--run", "trloo", "0", rl, low_sft])
    assert "trloo | 0 | 0.000 | 0.500 | +0.500" in capsys.readouterr().out
    main([*argv, "--run", "trloo", "0", rl, high_sft])
    assert "trloo | 0 | 0.500 | 0.500 | +0.000" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*argv, "--run", "trloo", "1", rl, summary("other", [0.0])])


def test_runs_before_both_arms_have_one_are_reported_without_a_decision(tmp_path, capsys):
    tasks = ["t0", "t1", "t2", "t3"]
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "novelty.json").write_text(
        json.dumps([{"uuid": t, "computation": "ab"[i % 2]} for i, t in enumerate(tasks)])
    )
    for name, rates in (("sft", [0.0, 0.25, 0.5, 0.0]), ("rl", [0.25, 0.25, 0.75, 0.0])):
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"per_task": {t: {"correct_rate": r} for t, r in zip(tasks, rates, strict=True)}})
        )
    argv = ["--tasks", str(tmp_path / "test"), "--out", str(tmp_path / "result")]
    run = ["--run", "trloo", "0", str(tmp_path / "rl.json"), str(tmp_path / "sft.json")]
    assert main([*argv, *run]) == 0
    printed = capsys.readouterr().out
    assert "trloo | 0 | 0.188 | 0.312 | +0.125" in printed
    assert "no decision: the control arm has no run yet" in printed and "learning claimed" not in printed
    assert "\na | +0.250 | -\n" in printed  # the arm without a run has no gain, not NaN
    record = json.loads((tmp_path / "result" / "decision.json").read_text())
    assert record["decision"] is None and record["missing_arms"] == ["control"]
    assert record["by_computation"]["trloo"] == {"a": 0.25, "b": 0.0}


def test_runs_found_in_their_folder_decide_as_listed_ones(tmp_path, capsys):
    """``--runs DIR`` (tools/protocol_runs.py) pairs every finished run with its own session's SFT evaluation,
    as the same runs given one by one with ``--run``; an incomplete run is named and left out."""
    tasks = ["t0", "t1"]
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "novelty.json").write_text(
        json.dumps([{"uuid": t, "computation": "a"} for t in tasks])
    )

    def summary(path, rates):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            json.dumps({"per_task": {t: {"correct_rate": r} for t, r in zip(tasks, rates, strict=True)}})
        )
        return str(path)

    runs = tmp_path / "runs"
    listed = []
    for session, arm, sft_rates, rl_rates in [
        ("s1", "trloo", [0.0, 0.25], [0.5, 0.5]),
        ("s2", "control", [0.5, 0.5], [0.25, 0.5]),
    ]:
        sft = summary(runs / session / "sft" / "eval_sft" / "summary.json", sft_rates)
        rl = summary(runs / session / f"run_{arm}_0" / f"eval_rl_{arm}_0" / "summary.json", rl_rates)
        listed += ["--run", arm, "0", rl, sft]
    (runs / "s3" / "run_trloo_1").mkdir(parents=True)  # cut before its test-set evaluation
    argv = ["--tasks", str(tmp_path / "test")]
    assert main([*argv, *listed]) == 0
    by_hand = capsys.readouterr().out
    assert main([*argv, "--runs", str(runs)]) == 0
    found = capsys.readouterr().out
    assert found.endswith(by_hand) and "trloo | 0 | 0.125 | 0.500 | +0.375" in found
    assert "left out: " in found and "run_trloo_1 (no test-set summary)" in found
    with pytest.raises(SystemExit):
        main([*argv, "--runs", str(tmp_path / "nowhere")])
