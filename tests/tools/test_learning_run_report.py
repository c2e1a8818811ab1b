"""tools/learning_run_report.py: held-out evaluations compared stage by stage, with or without the base model."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "learning_run_report.py"
_spec = importlib.util.spec_from_file_location("learning_run_report", SCRIPT)
learning_run_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(learning_run_report)


def _summary(rates: dict[str, float], samples: int) -> dict:
    mean = sum(rates.values()) / len(rates)
    return {
        "num_tasks": len(rates),
        "num_samples": samples * len(rates),
        "format_rate": 1.0,
        "compile_rate": 1.0,
        "correct_rate": mean,
        "hacked_rate": 0.0,
        "fast_p": {"1": mean, "1.2": mean},
        "fast_p_lower": {"1": mean, "1.2": mean},
        "per_task": {t: {"correct_rate": r, "fast_1": r, "fast_1.2": r} for t, r in rates.items()},
    }


def _write_run(folder: Path, evaluations: dict[str, dict]) -> None:
    for name, summary in evaluations.items():
        (folder / name).mkdir(parents=True)
        (folder / name / "summary.json").write_text(json.dumps(summary))
    (folder / "sft_log_history.json").write_text(
        json.dumps([{"step": 1, "loss": 0.9}, {"step": 2, "loss": 0.5}])
    )
    steps = [
        {
            "step": s,
            "turn_1/reward": 0.1 * s,
            "turn_1/correct": 0.1 * s,
            "time/generation_s": 10.0,
            "time/environment_s": 20.0,
            "time/optimization_s": 1.0,
            "mrs/rejected_frac": 0.0,
        }
        for s in (1, 2)
    ]
    (folder / "rl_log_history.json").write_text(json.dumps(steps))


TASKS = [f"t{i}" for i in range(12)]


def test_base_sft_and_rl_are_compared_in_sequence_with_a_paired_interval(tmp_path):
    base = _summary({t: 0.0 for t in TASKS}, 4)
    sft = _summary({t: 0.25 if i % 2 else 0.0 for i, t in enumerate(TASKS)}, 8)
    rl = _summary({t: 0.75 if i % 2 else 0.5 for i, t in enumerate(TASKS)}, 8)
    _write_run(tmp_path / "run", {"eval_base": base, "eval_sft": sft, "eval_rl": rl})

    text = learning_run_report.build([tmp_path / "run"], tmp_path / "out")

    assert "| metric | before SFT | after SFT | after RL |" in text
    assert "before SFT 12 x 4, after SFT 12 x 8, after RL 12 x 8" in text
    record = json.loads((tmp_path / "out" / "learning_run.json").read_text())
    assert list(record["paired"]) == ["before SFT -> after SFT", "after SFT -> after RL"]
    correct = {d["metric"]: d for d in record["paired"]["after SFT -> after RL"]}["correct_rate"]
    assert correct["difference"] == pytest.approx(0.5)  # every task gains exactly 0.5: a zero-width interval
    assert correct["low"] == pytest.approx(0.5) and correct["significant"]
    assert (tmp_path / "out" / "curves.png").stat().st_size > 0


def test_the_base_evaluation_is_optional_but_sft_and_rl_are_not(tmp_path):
    sft = _summary({t: 0.5 for t in TASKS}, 8)
    _write_run(tmp_path / "run", {"eval_sft": sft, "eval_rl": sft})
    text = learning_run_report.build([tmp_path / "run"], tmp_path / "out")
    assert "before SFT" not in text and "| metric | after SFT | after RL |" in text

    _write_run(tmp_path / "no_rl", {"eval_sft": sft})
    with pytest.raises(FileNotFoundError, match="eval_rl/summary.json"):
        learning_run_report.build([tmp_path / "no_rl"], tmp_path / "out2")


def test_rates_are_broken_down_by_computation_from_the_task_dataset(tmp_path):
    from dataset_builder.synthetic.generate import generate_tasks
    from dataset_builder.synthetic.rows import write_task_dataset

    tasks = generate_tasks(4, seed=3)
    write_task_dataset(tasks, tmp_path / "heldout")
    sft = _summary({t.uuid: 0.0 for t in tasks}, 8)
    rl = _summary({t.uuid: 1.0 if i == 0 else 0.0 for i, t in enumerate(tasks)}, 8)
    _write_run(tmp_path / "run", {"eval_sft": sft, "eval_rl": rl})

    text = learning_run_report.build([tmp_path / "run"], tmp_path / "out", tasks=tmp_path / "heldout")

    first = " + ".join(op.split(".")[-1] for op in tasks[0].ops)
    row = next(line for line in text.splitlines() if line.startswith(f"| {first} |"))
    assert "(1/" in row.split("|")[-2]  # after RL: the first task's computation has a solved task
