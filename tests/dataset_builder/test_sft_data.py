"""dataset_builder.sft_data: trajectories verified by the real judge (CPU interpreter), real feedback text in the
multi-turn ones, counted drops, JSONL / Dataset output and the CLI's help."""

import dataclasses
import json
import subprocess
import sys

import pytest

from dataset_builder.sft_data import KINDS, build_trajectories, to_dataset, write_jsonl
from dataset_builder.synthetic.generate import generate_task


@pytest.fixture(scope="module")
def built():
    """Three tasks, two of them sabotaged: one whose 'honest' answer is the flawed one (-> dropped entirely) and
    one whose 'flawed' answer is the honest one (-> multi-turn dropped as flawed_correct)."""
    from kernel_reward import Evaluator

    good = generate_task("norm", 3)
    bad_honest = dataclasses.replace(generate_task("softmax", 4), solution=generate_task("softmax", 4).flawed)
    bad_flawed = dataclasses.replace(
        generate_task("reduction", 5), flawed=generate_task("reduction", 5).solution
    )
    tasks = [good, bad_honest, bad_flawed]
    with Evaluator(device="cpu", workers=2, seed_base=0) as ev:
        trajectories, report = build_trajectories(
            tasks, lambda pairs: ev.evaluate_many(pairs, progress=False), held_out=["softmax"]
        )
    return tasks, trajectories, report


def test_both_kinds_built_from_verified_answers(built):
    tasks, trajectories, report = built
    good, _, bad_flawed = tasks
    kinds = {(t.uuid, t.kind) for t in trajectories}
    assert kinds == {(good.uuid, "single_turn"), (good.uuid, "multi_turn"), (bad_flawed.uuid, "single_turn")}
    assert report.kept == {"single_turn": 2, "multi_turn": 1}
    assert report.evaluations == 6
    single = next(t for t in trajectories if t.uuid == good.uuid and t.kind == "single_turn")
    assert [m["role"] for m in single.messages] == ["user", "assistant"]
    assert good.reference.strip() in single.messages[0]["content"]
    assert f"```python\n{good.solution.rstrip()}\n```" in single.messages[1]["content"]


def test_multi_turn_carries_the_judges_real_feedback(built):
    tasks, trajectories, _ = built
    good = tasks[0]
    multi = next(t for t in trajectories if t.kind == "multi_turn")
    assert [m["role"] for m in multi.messages] == ["user", "assistant", "user", "assistant"]
    assert good.flawed.rstrip() in multi.messages[1]["content"]
    feedback = multi.messages[2]["content"]
    assert "Server feedback (status/metrics/errors):" in feedback
    payload = json.loads(feedback[feedback.index("{") : feedback.rindex("}") + 1])
    assert payload["status"] == multi.flawed_status == "incorrect"
    assert payload["correctness"] is False and "outside atol" in payload["error"]
    assert good.flaw in multi.messages[3]["content"]
    assert good.solution.rstrip() in multi.messages[3]["content"]


def test_drops_are_counted_and_named(built):
    tasks, _, report = built
    _, bad_honest, bad_flawed = tasks
    assert report.dropped == {"honest_incorrect": 2, "flawed_correct": 1}
    assert {(d.uuid, d.kind, d.reason) for d in report.drops} == {
        (bad_honest.uuid, "single_turn", "honest_incorrect"),
        (bad_honest.uuid, "multi_turn", "honest_incorrect"),
        (bad_flawed.uuid, "multi_turn", "flawed_correct"),
    }
    summary = report.summary()
    assert "honest_incorrect 2" in summary and "flawed_correct 1" in summary
    assert json.loads(json.dumps(report.to_dict()))["dropped"] == {"honest_incorrect": 2, "flawed_correct": 1}


def test_split_recorded_and_outputs_round_trip(built, tmp_path):
    from datasets import load_dataset

    _, trajectories, _ = built
    assert {t.split for t in trajectories} == {"train"}  # softmax (held out) was the dropped task
    path = write_jsonl(trajectories, tmp_path / "train.jsonl")
    loaded = load_dataset("json", data_files=str(path))["train"]
    assert loaded["messages"] == [t.messages for t in trajectories]
    dataset = to_dataset(trajectories)
    assert dataset.column_names[:5] == ["uuid", "family", "variant", "split", "kind"]
    assert dataset[0]["messages"] == trajectories[0].messages


def test_bad_kinds_are_refused():
    with pytest.raises(ValueError, match="kinds must be a non-empty subset"):
        build_trajectories([], lambda pairs: [], kinds=["three_turn"])


def test_cli_help():
    proc = subprocess.run(
        [sys.executable, "-m", "dataset_builder.sft_data", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    for option in ("--count", "--seed", "--held-out", "--kinds", "--workers", "--out"):
        assert option in proc.stdout
    assert set(KINDS) <= set(proc.stdout.replace(",", " ").replace("{", " ").replace("}", " ").split())
