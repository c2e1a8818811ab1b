"""benchmarks/memory_footprint.py: large tasks written at scale, and a candidate that runs every phase."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "memory_footprint.py"
_spec = importlib.util.spec_from_file_location("memory_footprint", SCRIPT)
memory_footprint = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = memory_footprint  # its dataclasses look their module up there
_spec.loader.exec_module(memory_footprint)


def test_the_tasks_are_written_at_full_size_and_scaled_down_on_request():
    reference, candidate, input_bytes = memory_footprint.sources(memory_footprint.TASKS["relu"], 1)
    assert "torch.randn(16384, 98304)" in reference and input_bytes == 6 * memory_footprint.GIB
    reference, candidate, input_bytes = memory_footprint.sources(memory_footprint.TASKS["matmul"], 1024)
    assert "torch.randn(8, 8192), torch.randn(8, 8192)" in reference and input_bytes == 2 * 4 * 8 * 8192
    for source in (reference, candidate):
        compile(source, "<task>", "exec")


def test_the_copy_wrapped_candidate_is_correct_under_the_interpreter():
    row = memory_footprint.run_task("row_sum", memory_footprint.TASKS["row_sum"], 8192, "cpu", None, 120.0)
    assert row.status == "correct", row.error
    assert row.call_gib is None  # memory is measured on a GPU only
    assert row.phase_seconds["correctness"] > 0  # where the time went, for a slow problem's diagnosis


PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))

    def forward(self, x):
        return x * self.scale, x.sum(dim=1)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [16]
"""


def test_problem_files_are_evaluated_against_themselves_through_a_triton_copy(tmp_path, capsys):
    """--problems: a user's problem files (KernelBench's, say) at their own sizes; a tuple output and init
    arguments go through the wrapper unchanged."""
    (tmp_path / "scaled_rows.py").write_text(PROBLEM)
    (tmp_path / "z_other.py").write_text(PROBLEM)  # the second of two shards: not run here
    out = tmp_path / "rows.json"
    assert (
        memory_footprint.main(
            ["--device", "cpu", "--problems", str(tmp_path), "--shard", "0/2", "--json-out", str(out)]
        )
        == 0
    )
    import json

    written = json.loads(out.read_text())
    (row,) = written["rows"]
    assert row["task"] == "scaled_rows" and row["status"] == "correct", row["error"]
    assert written["meta"]["complete"] is True and not list(tmp_path.glob("*.partial"))
    assert "scaled_rows" in capsys.readouterr().out


def test_rows_are_written_after_every_task_so_a_stopped_run_keeps_them(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text(PROBLEM)
    (tmp_path / "b.py").write_text(PROBLEM)
    out = tmp_path / "rows.json"
    seen = []

    def evaluate_then_stop(evaluator, name, reference, candidate):
        if seen:  # the second task: the wall-clock limit of the device call, say
            raise KeyboardInterrupt
        seen.append(name)
        return memory_footprint.Row(name, "correct", None, None, None, None, None, 0.1, None, {}, [])

    monkeypatch.setattr(memory_footprint, "evaluate_pair", evaluate_then_stop)
    monkeypatch.setattr(memory_footprint, "open_evaluator", lambda *args: _NullEvaluator())
    import json

    with pytest.raises(KeyboardInterrupt):
        memory_footprint.main(["--device", "cpu", "--problems", str(tmp_path), "--json-out", str(out)])
    written = json.loads(out.read_text())
    assert [row["task"] for row in written["rows"]] == ["a"] and written["meta"]["complete"] is False


class _NullEvaluator:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_bad_problem_folders_are_named(tmp_path, capsys):
    with pytest.raises(SystemExit):
        memory_footprint.main(["--device", "cpu", "--problems", str(tmp_path / "missing")])
    assert "no *.py problem files" in capsys.readouterr().err
    (tmp_path / "helper.py").write_text("X = 1\n")
    with pytest.raises(SystemExit):
        memory_footprint.main(["--device", "cpu", "--problems", str(tmp_path)])
    assert "helper.py: not a problem file" in capsys.readouterr().err
    for shard in ("1", "2/2", "a/b"):
        with pytest.raises(SystemExit):
            memory_footprint.main(["--device", "cpu", "--problems", str(tmp_path), "--shard", shard])
        assert "--shard" in capsys.readouterr().err


def _row(task, status="correct", call=None, peak=None, flags=(), error=None, build=None):
    return memory_footprint.Row(
        task,
        status,
        call,
        peak,
        None,
        "timing",
        peak / call if peak and call else None,
        1.0,
        error,
        {} if build is None else {"build": build},
        list(flags),
    )


def test_the_summary_counts_statuses_and_out_of_memory_and_names_the_worst_large_call():
    rows = [
        _row("small", call=0.1, peak=1.0),
        _row("big", call=12.0, peak=31.5),
        _row("bigger", call=16.0, peak=40.0),
        _row("oom", "runtime_error", flags=["out_of_memory"]),
        _row("runner_oom", "runtime_error", error="CUDA out of memory. Tried to allocate 2 GiB"),
    ]
    line = memory_footprint.summary_line(rows)
    assert "5 tasks: correct 3, runtime_error 2" in line and "out of memory (flag or error): 2" in line
    assert "2.62 (big, 12.00 GiB)" in line  # the 10x small call is left out: its ratio is the fixed buffers'


def test_the_peak_is_also_read_against_what_the_reference_needs_alone():
    """A reference with intermediates larger than its call (Swish's sigmoid, a convolution reduced by a min over
    channels) needs more than its inputs + outputs on its own: the build phase (the reference's probe forward) shows
    how much, and the judge's overhead is read against the larger of the two."""
    swish = _row("swish", call=12.0, peak=36.25, build=18.0)
    relu = _row("relu", call=12.0, peak=31.5, build=12.0)
    assert memory_footprint.peak_over_reference(swish) == pytest.approx(36.25 / 18.0)
    assert memory_footprint.peak_over_reference(relu) == pytest.approx(31.5 / 12.0)
    assert memory_footprint.peak_over_reference(_row("no_phases", call=1.0, peak=3.0)) == pytest.approx(3.0)
    assert memory_footprint.peak_over_reference(_row("timeout", "timeout")) is None
    line = memory_footprint.summary_line([swish, relu])
    assert "largest peak/call at >= 1 GiB calls: 3.02 (swish" in line
    assert "largest peak/max(call, reference alone): 2.62 (relu" in line


def test_a_later_run_of_a_task_replaces_the_earlier_row_in_a_merge(tmp_path, capsys):
    """Re-runs of a few problems after a fix merge over the shard that first measured them, and are named."""
    import json
    from dataclasses import asdict

    first = [_row("a", "timeout"), _row("b", call=2.0, peak=5.0)]
    rerun = [_row("a", call=1.0, peak=3.0)]
    for name, rows in (("shard.json", first), ("rerun.json", rerun)):
        (tmp_path / name).write_text(
            json.dumps({"meta": {"complete": True}, "rows": [asdict(r) for r in rows]})
        )
    rows, incomplete, replaced = memory_footprint.merged_rows(
        [tmp_path / "shard.json", tmp_path / "rerun.json"]
    )
    assert [(row.task, row.status) for row in rows] == [("a", "correct"), ("b", "correct")]
    assert incomplete == [] and replaced == [f"a ({tmp_path / 'rerun.json'})"]
    assert memory_footprint.main(["--merge", str(tmp_path / "shard.json"), str(tmp_path / "rerun.json")]) == 0
    out = capsys.readouterr().out
    assert "2 tasks: correct 2" in out and f"re-run: a ({tmp_path / 'rerun.json'})" in out


def test_merge_prints_shards_as_one_table_and_names_an_incomplete_one(tmp_path, capsys):
    import json
    from dataclasses import asdict

    for index, (rows, complete) in enumerate([([_row("b", call=2.0, peak=5.0)], True), ([_row("a")], False)]):
        (tmp_path / f"{index}.json").write_text(
            json.dumps({"meta": {"complete": complete}, "rows": [asdict(row) for row in rows]})
        )
    assert memory_footprint.main(["--merge", str(tmp_path / "0.json"), str(tmp_path / "1.json")]) == 0
    out = capsys.readouterr().out
    assert out.index("\na ") < out.index("\nb ") and "2 tasks: correct 2" in out
    assert f"incomplete runs: {tmp_path / '1.json'}" in out
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit):
        memory_footprint.main(["--merge", str(tmp_path / "bad.json")])
    assert "--merge" in capsys.readouterr().err


def test_shrunk_problems_keep_their_structure_with_small_sizes():
    source = PROBLEM.replace("return [torch.randn(8, 16)]", "return [torch.randn(batch_size, dim)]").replace(
        "def get_inputs",
        "batch_size = 128\ndim = 1024 * 4  # wide\nh, w = 64, 3\nscale = 0.5\n\n\ndef get_inputs",
    )
    small = memory_footprint.shrunk(source, 24)
    assert "batch_size = 2\n" in small and "dim = 24\n" in small and "h, w = 24, 3\n" in small
    assert "scale = 0.5" in small and "torch.randn(batch_size, dim)" in small
    compile(small, "<shrunk>", "exec")


def test_only_picks_problems_by_table_name_or_number_and_names_a_miss(tmp_path):
    level = tmp_path / "level1"
    level.mkdir()
    files = [level / name for name in ("5_Matrix_scalar.py", "57_conv_transposed.py", "570_other.py")]
    picked = memory_footprint.only_named(files, tmp_path, ["level1/57", "level1/5_Matrix_scalar"])
    assert [path.name for path in picked] == ["5_Matrix_scalar.py", "57_conv_transposed.py"]
    with pytest.raises(ValueError, match="no problem file named level1/58"):
        memory_footprint.only_named(files, tmp_path, ["level1/57", "level1/58"])
