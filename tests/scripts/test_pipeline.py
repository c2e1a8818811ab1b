"""scripts/pipeline.py's split / sft_data / sft / train / curve / evaluate stages (the README's main job), as subprocess
runs."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pipeline(out, *args, timeout=300):
    return subprocess.run(
        [sys.executable, "scripts/pipeline.py", "--out", str(out), "--preset", "small", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_split_holds_out_disjoint_tasks(tmp_path):
    done = pipeline(tmp_path, "--stages", "build", "split", "--heldout-tasks", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "pipeline_summary.json").read_text())
    from datasets import load_dataset

    train = load_dataset(str(tmp_path / "splits" / "train"))["train"]
    heldout = load_dataset(str(tmp_path / "splits" / "heldout"))["train"]
    train_ids = {row["uuid"] for row in train["extra_info"]}
    heldout_ids = {row["uuid"] for row in heldout["extra_info"]}
    assert len(heldout_ids) == 3 and not train_ids & heldout_ids
    assert len(train_ids) + 3 == summary["build"]["rows_kept"]
    assert sorted(heldout_ids) == summary["split"]["heldout"]["ids"]
    bad = pipeline(tmp_path, "--stages", "split", "--heldout-tasks", "0")
    assert bad.returncode == 1 and "--heldout-tasks must be between 1 and" in bad.stderr


@pytest.mark.slow
def test_full_pipeline_trains_and_evaluates(tmp_path):
    done = pipeline(
        tmp_path,
        "--train-steps",
        "1",
        "--eval-samples",
        "1",
        "--heldout-tasks",
        "2",
        "--sft-tasks",
        "6",
        "--sft-heldout-tasks",
        "2",
        "--sft-steps",
        "4",
        "--sft-eval-max-new-tokens",
        "16",
        "--rl-pool-tasks",
        "2",
        "--curve-steps",
        "2",
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.rstrip().endswith(f"evaluation report: {tmp_path}/eval/report.md")
    summary = json.loads((tmp_path / "pipeline_summary.json").read_text())
    assert list(summary) == ["build", "validate", "split", "sft_data", "sft", "train", "curve", "evaluate"]
    assert summary["train"]["base_model"] == str(tmp_path / "sft")
    # after SFT the policy trains on the RL pool, and each step's reward signal is reported
    assert (
        summary["train"]["dataset"]
        == summary["sft_data"]["rl_pool"]
        == str(tmp_path / "sft_data" / "rl_pool")
    )
    assert len(summary["train"]["rl_signal"]) == 1 and set(summary["train"]["rl_signal"][0]) == {
        "reward",
        "frac_reward_zero_std",
        "grad_norm",
    }
    assert summary["train"]["heldout_after_rl"]["model"] == str(tmp_path / "trained")  # the sft table's tasks
    assert (tmp_path / "trained" / "config.json").is_file()
    evaluation = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert (evaluation["num_tasks"], evaluation["num_samples"], evaluation["num_turns"]) == (2, 2, 2)
    assert evaluation["config"]["model"] == str(tmp_path / "trained")


def test_sft_stages_verify_train_and_evaluate_before_and_after(tmp_path):
    done = pipeline(
        tmp_path,
        "--stages",
        "sft_data",
        "sft",
        "--sft-tasks",
        "4",
        "--sft-heldout-tasks",
        "1",
        "--sft-steps",
        "2",
        "--sft-eval-max-new-tokens",
        "8",
        "--rl-pool-tasks",
        "0",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((tmp_path / "pipeline_summary.json").read_text())
    assert list(summary) == ["sft_data", "sft"]
    data = summary["sft_data"]
    assert (data["split"], data["heldout_tasks"], data["tasks"], data["evaluations"]) == ("task", 1, 4, 8)
    rows = [json.loads(line) for line in (tmp_path / "sft_data" / "train.jsonl").read_text().splitlines()]
    assert len(rows) == data["train_trajectories"] > 0 and {row["split"] for row in rows} == {"train"}
    from datasets import load_dataset

    heldout = load_dataset(str(tmp_path / "sft_data" / "heldout_tasks"))["train"]
    assert len(heldout) == 1 and heldout[0]["extra_info"]["uuid"] not in {row["uuid"] for row in rows}
    sft = summary["sft"]
    assert sft["sft_model"] == str(tmp_path / "sft") and (tmp_path / "sft" / "config.json").is_file()
    for side in ("before", "after"):
        assert (sft[side]["num_tasks"], sft[side]["num_samples"]) == (1, 1)
        for key in ("format_rate", "compile_rate", "correct_rate", "hacked_rate"):
            assert 0.0 <= sft[side][key] <= 1.0
        assert (tmp_path / "sft_eval" / side / "summary.json").is_file()
    # the base model's tokenizer learned merges from the SFT training split too: more tokens than the built-in 400
    assert (
        sft["before"]["model"] == str(tmp_path / "tiny-model-sft")
        and sft["after"]["model"] == sft["sft_model"]
    )
    from transformers import AutoTokenizer

    assert len(AutoTokenizer.from_pretrained(str(tmp_path / "tiny-model-sft"))) > 400
    assert f"{'metric':<31}  before   after" in done.stdout and "correct_rate" in done.stdout
    # the held-out task's correct rate is also given apart as seen-answer or novel-answer (a training task has, or
    # has not, the same honest answer)
    seen = data["heldout_seen_answer"]
    for side in ("before", "after"):
        assert (sft[side]["tasks_seen_answer"], sft[side]["tasks_novel_answer"]) == (len(seen), 1 - len(seen))
    group = "seen_answer" if seen else "novel_answer"
    assert sft["after"][f"correct_rate_{group}"] == sft["after"]["correct_rate"]
    assert f"correct_rate_{group} (1)" in done.stdout


def test_the_curve_stage_trains_trloo_against_a_shuffled_reward_control(tmp_path):
    done = pipeline(tmp_path, "--stages", "curve", "--curve-steps", "2", "--curve-seeds", "0", "1")
    assert done.returncode == 0, done.stderr[-3000:]
    curve = json.loads((tmp_path / "pipeline_summary.json").read_text())["curve"]
    assert set(curve["turn_2_reward_last_fifth"]) == {
        "trloo_seed0",
        "trloo_seed1",
        "control_seed0",
        "control_seed1",
    }
    assert curve["trloo_minus_control"]["turn_2_reward"]["seeds"] == 2
    assert Path(curve["plot"]).is_file() and "trloo - control, turn_2_reward" in done.stdout


def test_sft_data_rejects_a_heldout_count_out_of_range(tmp_path):
    bad = pipeline(tmp_path, "--stages", "sft_data", "--sft-tasks", "4", "--sft-heldout-tasks", "4")
    assert bad.returncode == 1 and "--sft-heldout-tasks must be between 1 and 3" in bad.stderr
    bad = pipeline(tmp_path, "--stages", "sft_data", "--sft-tasks", "4", "--rl-pool-tasks", "-2")
    assert bad.returncode == 1 and "--rl-pool-tasks must be >= 0, got -2" in bad.stderr


def test_sft_data_writes_an_rl_pool_of_fresh_solvable_tasks_of_the_trained_variants(tmp_path):
    done = pipeline(
        tmp_path,
        "--stages",
        "sft_data",
        "--sft-tasks",
        "12",
        "--sft-split",
        "variant",
        "--rl-pool-tasks",
        "3",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "pipeline_summary.json").read_text())["sft_data"]
    assert data["rl_pool_tasks"] == 3 and data["rl_pool"] == str(tmp_path / "sft_data" / "rl_pool")
    from datasets import load_dataset

    pool = load_dataset(str(tmp_path / "sft_data" / "rl_pool"))["train"]
    trained = [json.loads(line) for line in (tmp_path / "sft_data" / "train.jsonl").read_text().splitlines()]
    heldout = load_dataset(str(tmp_path / "sft_data" / "heldout_tasks"))["train"]
    seen = {row["uuid"] for row in trained} | {row["extra_info"]["uuid"] for row in heldout}
    pool_ids = [row["extra_info"]["uuid"] for row in pool]
    assert len(set(pool_ids)) == 3 and not set(pool_ids) & seen
    # no pool task is of a held-out variant: each of those has an op no trained variant uses
    held_ops = {"torch.amax", "torch.rsqrt", "torch.nn.functional.log_softmax"}
    assert all(not set(row["extra_info"]["ops"]) & held_ops for row in pool), [
        r["extra_info"]["ops"] for r in pool
    ]
    # --rl-pool-answers seen (the default): every pool task's honest answer is a training task's
    from dataset_builder.synthetic.generate import generate_tasks

    assert data["rl_pool_answers"] == "seen"
    taught = {
        task.solution for task in generate_tasks(12, seed=0) if task.uuid in {row["uuid"] for row in trained}
    }
    drawn = {
        task.uuid: task
        for task in generate_tasks(
            24, seed=1, families=sorted({"elementwise", "norm", "reduction", "softmax"})
        )
    }
    assert all(drawn[uuid].solution in taught for uuid in pool_ids)
