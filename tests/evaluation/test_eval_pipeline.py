"""scripts/pipeline.py's split / train / evaluate stages (the README's main job), as subprocess runs."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pipeline(out, *args, timeout=300):
    return subprocess.run([sys.executable, "scripts/pipeline.py", "--out", str(out), "--preset", "small", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


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
    done = pipeline(tmp_path, "--train-steps", "1", "--eval-samples", "1", "--heldout-tasks", "2", timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.rstrip().endswith(f"evaluation report: {tmp_path}/eval/report.md")
    summary = json.loads((tmp_path / "pipeline_summary.json").read_text())
    assert list(summary) == ["build", "validate", "split", "train", "evaluate"]
    assert (tmp_path / "trained" / "config.json").is_file()
    evaluation = json.loads((tmp_path / "eval" / "summary.json").read_text())
    assert (evaluation["num_tasks"], evaluation["num_samples"], evaluation["num_turns"]) == (2, 2, 2)
    assert evaluation["config"]["model"] == str(tmp_path / "trained")
