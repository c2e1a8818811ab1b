"""Bad input to the training scripts meets one line on stderr and exit 2, before any model or dataset is loaded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.mark.parametrize("script", ["train.py", "sft.py"])
@pytest.mark.parametrize(
    ("recipe", "expected"),
    [
        (None, "does not exist"),
        ("learning_rat: 1e-5\n", "unknown option 'learning_rat' (did you mean learning_rate?)"),
        ("learning_rate: [1\n", "is not valid YAML (line 2)"),
        ("learning_rate: abc\n", "invalid float value: 'abc'"),
    ],
    ids=["missing", "misspelled_key", "malformed_yaml", "wrong_type"],
)
def test_a_bad_recipe_is_answered_in_one_line(script, recipe, expected, tmp_path):
    path = tmp_path / "recipe.yaml"
    if recipe is not None:
        path.write_text(recipe)
    done = _run(script, "--config", str(path))
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], done.stderr[-2000:]


def test_a_missing_or_empty_dataset_is_answered_in_one_line(tmp_path):
    from trl_ext.script_input import load_dataset_or_exit

    for folder in (tmp_path / "missing", tmp_path):
        with pytest.raises(SystemExit) as exit_info:
            load_dataset_or_exit(str(folder))
        assert exit_info.value.code == 2


def test_the_main_job_checks_its_recipes_before_the_first_stage(tmp_path):
    done = _run("pipeline.py", "--out", str(tmp_path / "out"), "--recipe", str(tmp_path / "typo.yaml"))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("error: --recipe") and "does not exist" in lines[0]
    assert not (tmp_path / "out").exists()  # no stage ran


@pytest.mark.parametrize(
    ("script", "recipe"), [("train.py", "recipes/tiny_cpu.yaml"), ("sft.py", "recipes/tiny_cpu_sft.yaml")]
)
def test_the_scripts_answer_a_missing_dataset_or_model_in_one_line(script, recipe, tmp_path):
    """Through the scripts themselves, as a user runs them: a missing dataset folder (checked first, before any
    model is loaded), then a local model folder that does not exist (offline, it would be a Hub traceback)."""
    dataset = tmp_path / "dataset"
    done = _run(
        script, "--config", recipe, "--dataset_name", str(dataset), "--model_name_or_path", "runs/none"
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("error: cannot load dataset")
    if script == "train.py":  # sft.py's dataset is a JSONL file: build the row-dataset case for train.py only
        import datasets

        datasets.Dataset.from_list([{"prompt": "x"}]).to_parquet(str(dataset / "train.parquet"))
        done = _run(
            script, "--config", recipe, "--dataset_name", str(dataset), "--model_name_or_path", "runs/none"
        )
        lines = done.stderr.strip().splitlines()  # datasets' progress bar first, then the one error line
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
        assert lines[-1].startswith("error: cannot load model 'runs/none': no such local folder"), lines


@pytest.mark.parametrize("empty", [False, True], ids=["missing", "empty"])
def test_evaluate_answers_a_missing_or_empty_dataset_in_one_line(empty, tmp_path):
    folder = tmp_path / "dataset"
    if empty:
        folder.mkdir()
    completions = tmp_path / "completions.jsonl"
    completions.write_text("")
    done = _run(
        "evaluate.py",
        "--dataset",
        str(folder),
        "--completions",
        str(completions),
        "--out",
        str(tmp_path / "o"),
    )
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: cannot load dataset") and "dataset_builder build" in last
    assert "Traceback" not in done.stderr


def test_a_missing_local_model_folder_is_refused_without_asking_the_hub(tmp_path, monkeypatch):
    """A name that can only be a local path fails at once; a Hub-shaped name is still tried as a Hub id."""
    from trl_ext.script_input import pretrained_or_exit

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    tried = []
    for name in (str(tmp_path / "none"), "./none", "runs/none"):
        with pytest.raises(SystemExit) as exit_info:
            pretrained_or_exit(tried.append, name)
        assert exit_info.value.code == 2
    assert tried == []

    def hub(name):
        tried.append(name)
        raise OSError("We couldn't connect to 'https://huggingface.co'\nmore")

    with pytest.raises(SystemExit):
        pretrained_or_exit(hub, "org/model")
    assert tried == ["org/model"]
