"""tools/select_rl_pool.py: keep the pool tasks a model solves some of the time."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "select_rl_pool.py"
_spec = importlib.util.spec_from_file_location("select_rl_pool", SCRIPT)
select_rl_pool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(select_rl_pool)


def test_tasks_inside_the_band_are_kept_bounds_included():
    per_task = {
        "a": {"correct_rate": 0.0},
        "b": {"correct_rate": 0.125},
        "c": {"correct_rate": 0.5},
        "d": {"correct_rate": 0.625},
        "e": {"correct_rate": 1.0},
        "f": {"correct_rate": 0.1},
    }
    assert select_rl_pool.select_tasks(per_task, 0.1, 0.5) == ["b", "c", "f"]
    with pytest.raises(ValueError, match="0 <= min <= max <= 1"):
        select_rl_pool.select_tasks(per_task, 0.6, 0.5)


def test_the_cli_writes_the_filtered_dataset_or_refuses_when_too_few_qualify(tmp_path):
    from datasets import load_dataset

    from dataset_builder.synthetic.generate import generate_tasks
    from dataset_builder.synthetic.rows import write_task_dataset

    tasks = generate_tasks(4, seed=3)
    write_task_dataset(tasks, tmp_path / "pool")
    rates = [0.0, 0.25, 0.5, 1.0]
    summary = tmp_path / "summary.json"
    summary.write_text(
        json.dumps({"per_task": {t.uuid: {"correct_rate": r} for t, r in zip(tasks, rates, strict=True)}})
    )
    args = ["--dataset", str(tmp_path / "pool"), "--summary", str(summary), "--out", str(tmp_path / "kept")]
    assert select_rl_pool.main([*args, "--at-least", "3"]) == 1 and not (tmp_path / "kept").exists()
    assert select_rl_pool.main([*args, "--at-least", "2", "--uuids-out", str(tmp_path / "kept.json")]) == 0
    kept = load_dataset(str(tmp_path / "kept"))["train"]
    assert sorted(row["uuid"] for row in kept["extra_info"]) == sorted([tasks[1].uuid, tasks[2].uuid])
    # the uuids written are the form --uuids reads: the same pool rebuilt from them
    assert json.loads((tmp_path / "kept.json").read_text()) == {
        "uuids": sorted([tasks[1].uuid, tasks[2].uuid])
    }
    rebuilt = ["--dataset", str(tmp_path / "pool"), "--uuids", str(tmp_path / "kept.json")]
    assert select_rl_pool.main([*rebuilt, "--out", str(tmp_path / "again")]) == 0
    again = load_dataset(str(tmp_path / "again"))["train"]
    assert sorted(row["uuid"] for row in again["extra_info"]) == sorted(
        row["uuid"] for row in kept["extra_info"]
    )


def test_a_committed_pool_is_rebuilt_from_its_uuids_and_an_unknown_uuid_refused(tmp_path, capsys):
    from datasets import load_dataset

    from dataset_builder.synthetic.generate import generate_tasks
    from dataset_builder.synthetic.rows import write_task_dataset

    tasks = generate_tasks(4, seed=3)
    write_task_dataset(tasks, tmp_path / "pool")
    listed = tmp_path / "rl_pool.json"
    listed.write_text(json.dumps({"uuids": [tasks[0].uuid, tasks[3].uuid]}))
    args = ["--dataset", str(tmp_path / "pool"), "--uuids", str(listed), "--out", str(tmp_path / "kept")]
    assert select_rl_pool.main(args) == 0
    kept = load_dataset(str(tmp_path / "kept"))["train"]
    assert sorted(row["uuid"] for row in kept["extra_info"]) == sorted([tasks[0].uuid, tasks[3].uuid])

    listed.write_text(json.dumps({"uuids": [tasks[0].uuid, "not-a-task"]}))
    with pytest.raises(SystemExit):
        select_rl_pool.main([*args[:-1], str(tmp_path / "other")])
    assert "not-a-task" in capsys.readouterr().err and not (tmp_path / "other").exists()
