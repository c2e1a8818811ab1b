"""Harness plumbing with an injected evaluator: batching, prompts rebuilt per turn, resume, report files.

The real-Evaluator known-answer test lives in test_run_saved.py; this one pins the harness's own logic
(which candidates reach the evaluator, in what order, and what is written) without running any kernel.
"""

import json

import pytest

from kernel_eval.cache import ResultCache
from kernel_eval.compare import compare_summaries
from kernel_eval.completions import SavedTrajectory
from kernel_eval.harness import evaluate_saved
from kernel_eval.report import write_run
from kernel_eval.tasks import EvalTask, filter_tasks, tasks_from_rows
from tests.support.eval_fakes import CountingEvaluator, block

TASKS = [
    EvalTask(
        uuid=f"t{i}",
        reference_code=f"# ref {i}",
        prompt=({"role": "user", "content": f"p{i}"},),
        level=str(1 + i % 2),
    )
    for i in range(2)
]
TRAJECTORIES = [
    SavedTrajectory("t0", 0, (block("WRONG"), block("HONEST"))),
    SavedTrajectory("t0", 1, ("no code at all", block("HACK"))),
    SavedTrajectory("t1", 0, (block("HONEST"),)),  # stopped after turn 1
    SavedTrajectory("t1", 1, (block("HACK"), block("WRONG"))),
]


def run(tmp_path, evaluator):
    cache = ResultCache(tmp_path / "out" / "cache.jsonl")
    records = evaluate_saved(
        TASKS, TRAJECTORIES, evaluator, cache, evaluator_settings={"device": "cpu"}, batch_size=3
    )
    return records, write_run(tmp_path / "out", records, config={"source": "test"})


def test_saved_completions_metrics_prompts_and_outputs(tmp_path):
    evaluator = CountingEvaluator()
    records, summary = run(tmp_path, evaluator)
    assert len(evaluator.calls) == 7 and evaluator.calls[0] == ("# ref 0", block("WRONG"))
    # Final turn: HONEST, HACK, HONEST (kept from turn 1), WRONG -> correct 2/4, hacked 1/4, all formatted.
    assert (summary["num_samples"], summary["num_tasks"], summary["num_turns"]) == (4, 2, 2)
    assert (
        summary["format_rate"],
        summary["compile_rate"],
        summary["correct_rate"],
        summary["hacked_rate"],
    ) == (1.0, 1.0, 0.5, 0.25)
    assert summary["fast_p"] == {"1": None, "1.2": None, "1.5": None, "2": None}
    # Turn 1: WRONG, format error, HONEST, HACK.
    t1 = summary["per_turn"][0]
    assert (t1["format_rate"], t1["compile_rate"], t1["correct_rate"], t1["hacked_rate"]) == (
        0.75,
        0.75,
        0.25,
        0.25,
    )
    assert summary["best_of_history"]["correct_rate"] == 0.5
    assert summary["status_counts"] == {"correct": 2, "hacked": 1, "incorrect": 1}
    # t0: final HONEST + HACK; t1: HONEST (turn 1 kept) + WRONG (its turn 1 was a hack).
    assert {
        k: (v["correct_rate"], v["hacked_rate"], v["best_correct_rate"])
        for k, v in summary["per_task"].items()
    } == {"t0": (0.5, 0.5, 0.5), "t1": (0.5, 0.0, 0.5)}
    # The turn-2 prompt is the task prompt + turn-1 completion + turn-1 feedback.
    second = records[0].turns[1]
    assert [m["content"] for m in second.prompt][:2] == ["p0", block("WRONG")]
    assert "Server feedback (status/metrics/errors):\nfb: wrong" in second.prompt[2]["content"]
    assert records[1].turns[0].code is None and "class ModelNew" in records[0].turns[0].code
    out = tmp_path / "out"
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
    assert (
        len(lines) == 7
        and lines[0]["result"]["status"] == "incorrect"
        and lines[0]["code"].startswith("# WRONG")
    )
    assert (out / "completions.jsonl").read_text().count("\n") == 7
    report = (out / "report.md").read_text()
    assert "| 2 | 4 | 1.000 | 1.000 | 0.500 | 0.250 | n/a" in report
    for name in ("fast_p_by_turn", "status_by_turn", "speedup_distribution"):
        assert (out / "plots" / f"{name}.png").stat().st_size > 1000


def test_resume_recomputes_nothing(tmp_path):
    run(tmp_path, CountingEvaluator())
    again = CountingEvaluator()
    records, summary = run(tmp_path, again)
    assert again.calls == []
    assert summary["cached_turns"] == 7 and summary["evaluated_turns"] == 0
    assert summary["correct_rate"] == 0.5
    # A changed completion is a cache miss for that turn only.
    changed = [*TRAJECTORIES[:3], SavedTrajectory("t1", 1, (block("HACK"), block("HONEST")))]
    third = CountingEvaluator()
    evaluate_saved(
        TASKS,
        changed,
        third,
        ResultCache(tmp_path / "out" / "cache.jsonl"),
        evaluator_settings={"device": "cpu"},
    )
    assert third.calls == [("# ref 1", block("HONEST"))]


def test_mismatched_tasks_are_errors(tmp_path):
    cache = ResultCache(tmp_path / "c.jsonl")
    with pytest.raises(ValueError, match=r"not among the selected tasks: \['zz'\]"):
        evaluate_saved(
            TASKS, [SavedTrajectory("zz", 0, ("x",))], CountingEvaluator(), cache, evaluator_settings={}
        )
    with pytest.raises(ValueError, match=r"no saved completions for selected task\(s\) \['t1'\]"):
        evaluate_saved(TASKS, TRAJECTORIES[:2], CountingEvaluator(), cache, evaluator_settings={})


def test_task_rows_and_filters():
    rows = [
        {
            "prompt": [{"role": "user", "content": "p"}],
            "reward_model": {"ground_truth": "ref"},
            "extra_info": {"uuid": f"u{i}", "level": str(i % 2)},
        }
        for i in range(5)
    ]
    tasks = tasks_from_rows(rows)
    assert [t.uuid for t in filter_tasks(tasks, levels=["1"])] == ["u1", "u3"]
    assert [t.uuid for t in filter_tasks(tasks, ids=["u4", "u0"], limit=1)] == ["u0"]
    with pytest.raises(ValueError, match=r"no task with id\(s\) \['nope'\]"):
        filter_tasks(tasks, ids=["nope"])
    with pytest.raises(ValueError, match="dataset row 1: reward_model.ground_truth"):
        tasks_from_rows([rows[0], {"prompt": rows[0]["prompt"], "extra_info": {"uuid": "x"}}])
    with pytest.raises(ValueError, match="share the task id 'u0'"):
        tasks_from_rows([rows[0], rows[0]])


def test_compare_side_by_side(tmp_path):
    _, summary = run(tmp_path, CountingEvaluator())
    better = json.loads(json.dumps(summary))
    better["correct_rate"] = 0.75
    table = compare_summaries(summary, better, names=("base", "tuned"))
    assert "| correct_rate | 0.500 | 0.750 | +0.250 |" in table
    assert "## Turn 2" in table and "## Best-of-history" in table


def test_the_report_names_the_speedup_baseline(tmp_path):
    from kernel_eval.report import render_markdown

    _, summary = run(tmp_path, CountingEvaluator())
    timed = {**summary, "timing_available": True}
    assert "Speedups are over eager PyTorch" in render_markdown(timed)
    compiled = {**timed, "config": {"baseline": "compile"}}
    assert "over torch.compile(reference)" in render_markdown(compiled)
    assert "Speedups are over" not in render_markdown(summary)  # no timing: nothing to say
