"""benchmarks/learning_curve.py: the paired TRLOO - GRPO difference over seeds, and a two-step run end to end."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

import learning_curve  # noqa: E402


def run(estimator: str, seed: int, solved: float) -> dict:
    return {"estimator": estimator, "seed": seed, "solved": [0.0] * 8 + [solved] * 2}


def test_the_paired_difference_is_taken_per_seed_with_a_bootstrap_interval():
    runs = [run("trloo", 0, 0.8), run("grpo_turn", 0, 0.6), run("trloo", 1, 0.5), run("grpo_turn", 1, 0.6)]
    runs.append(run("trloo", 2, 0.9))  # no grpo_turn partner: left out
    diff = learning_curve.paired_difference(runs, "solved", resamples=2000)
    assert diff["seeds"] == 2 and diff["trloo_higher"] == 1
    assert abs(diff["mean"] - 0.05) < 1e-9 and diff["low"] <= diff["mean"] <= diff["high"]
    assert abs(diff["low"] + 0.1) < 1e-9 and abs(diff["high"] - 0.2) < 1e-9  # the two seeds' own differences
    assert learning_curve.paired_difference(runs[:2], "solved") is None


def test_two_steps_of_both_estimators_with_mrs(tmp_path):
    learning_curve.main(
        ["--out", str(tmp_path), "--steps", "2", "--seeds", "0", "1", "--prompts", "2", "--generations", "2"]
        + ["--max-tokens", "2", "--turns", "2", "--stop-on-success", "--mrs"]
    )
    data = json.loads((tmp_path / "curve.json").read_text())
    assert len(data["runs"]) == 4 and data["paired"]["grpo_turn"]["solved"]["seeds"] == 2
    assert (tmp_path / "curve.png").exists()


def test_the_control_arm_trains_trloo_on_group_shuffled_rewards(tmp_path):
    learning_curve.main(
        ["--out", str(tmp_path), "--steps", "2", "--seeds", "0", "1", "--estimators", "trloo", "control"]
        + ["--prompts", "2", "--generations", "2", "--max-tokens", "2"]
    )
    data = json.loads((tmp_path / "curve.json").read_text())
    assert len(data["runs"]) == 4
    assert set(data["paired"]) == {"control"} and data["paired"]["control"]["solved"]["seeds"] == 2
    arms = {(r["estimator"], r["advantage_estimator"], r["reward_control"]) for r in data["runs"]}
    assert arms == {("trloo", "trloo", "none"), ("control", "trloo", "permute_within_group")}


def test_mrs_on_against_off_with_bf16_rollouts(tmp_path):
    """The trloo_mrs arm trains with MRS, the trloo arm without, both on rollouts sampled under bf16 autocast:
    both measure the mismatch, only the MRS arm may reject on it (the tiny model's stays inside MRS's band)."""
    learning_curve.main(
        ["--out", str(tmp_path), "--steps", "2", "--seeds", "0", "1", "--estimators", "trloo", "trloo_mrs"]
        + ["--prompts", "2", "--generations", "2", "--max-tokens", "3", "--generation-autocast", "bfloat16"]
    )
    data = json.loads((tmp_path / "curve.json").read_text())
    assert set(data["paired"]) == {"trloo_mrs_minus_trloo"}
    assert data["paired"]["trloo_mrs_minus_trloo"]["solved"]["seeds"] == 2
    for run in data["runs"]:  # the mismatch is measured in both arms; only the MRS arm may act on it
        assert min(run["mrs_mean_abs_log_ratio"]) > 1e-5, run  # same-numerics runs read ~1e-7
    assert all(x != x or x == 0 for r in data["runs"] if r["estimator"] == "trloo" for x in r["mrs_rejected"])
