"""benchmarks/reference_time.py: a problem's own reference timed outside the evaluator (CPU here)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "reference_time.py"
_spec = importlib.util.spec_from_file_location("reference_time", SCRIPT)
reference_time = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = reference_time
_spec.loader.exec_module(reference_time)

PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x):
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(256, 64)]


def get_init_inputs():
    return [64]
"""


def test_a_problem_is_timed_with_its_sizes_and_written_as_json(tmp_path, capsys):
    problem = tmp_path / "1_Linear_ReLU.py"
    problem.write_text(PROBLEM)
    out = tmp_path / "times.json"
    assert (
        reference_time.main(["--device", "cpu", "--repeats", "2", "--json-out", str(out), str(problem)]) == 0
    )
    assert "1_Linear_ReLU.py" in capsys.readouterr().out
    (row,) = json.loads(out.read_text())["rows"]
    assert row["problem"] == "1_Linear_ReLU.py"
    assert row["input_gib"] == pytest.approx(256 * 64 * 4 / 2**30)
    assert row["output_gib"] == pytest.approx(256 * 64 * 4 / 2**30)
    assert row["forward_s_tf32_off"] > 0 and row["forward_s_tf32_on"] > 0 and row["inputs_s"] >= 0


def test_a_missing_or_incomplete_problem_is_named_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "times.json"
    with pytest.raises(SystemExit):
        reference_time.main(["--device", "cpu", "--json-out", str(out), str(tmp_path / "missing.py")])
    assert "missing.py: no such problem file" in capsys.readouterr().err
    helper = tmp_path / "helper.py"
    helper.write_text("class Model:\n    pass\n")
    with pytest.raises(SystemExit):
        reference_time.main(["--device", "cpu", "--json-out", str(out), str(helper)])
    assert "helper.py: reference program defines no `get_inputs`" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(SystemExit):
        reference_time.main(["--device", "cpu", "--repeats", "0", str(helper)])
    assert "--repeats" in capsys.readouterr().err
