"""The experiment's curves (tools/protocol_curves.py): each run's series come from its log history, bad input is
refused with the file named, and the command writes the figure and the series."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "protocol_curves.py"
_spec = importlib.util.spec_from_file_location("protocol_curves", SCRIPT)
protocol_curves = importlib.util.module_from_spec(_spec)
sys.modules["protocol_curves"] = protocol_curves  # its dataclass looks its module up there
_spec.loader.exec_module(protocol_curves)

HISTORY = [
    {
        "step": 1,
        "turn_1/reward": 0.5,
        "turn_1/compiled": 0.9,
        "filters/tied_group_frac": 0.25,
        "time/generation_s": 30.0,
        "time/environment_s": 20.0,
        "time/optimization_s": 1.0,
    },
    {
        "step": 2,
        "turn_1/reward": 1.0,
        "turn_1/compiled": 0.6,
        "filters/tied_group_frac": 0.0,
        "time/generation_s": 10.0,
        "time/environment_s": 40.0,
        "time/optimization_s": 1.0,
    },
    {"step": 2, "eval_turn_1/correct": 0.2, "eval_turn_1/reward": 0.3},
    {"step": 2, "train_loss": -0.01},
]


def test_a_runs_series_and_its_mean_step_split():
    run = protocol_curves.run_curves("trloo", 0, HISTORY)
    assert run.probe == [(2, 0.2)] and run.reward == [(1, 0.5), (2, 1.0)]
    assert run.tied_groups == [(1, 0.25), (2, 0.0)]
    assert run.compiled == [(1, 0.9), (2, 0.6)]  # the control arm's collapse shows here first
    assert run.mean_step_seconds == {"generation_s": 20.0, "environment_s": 30.0, "optimization_s": 1.0}
    with pytest.raises(ValueError, match="unknown arm 'grpo'"):
        protocol_curves.run_curves("grpo", 0, HISTORY)
    with pytest.raises(ValueError, match="no training step"):
        protocol_curves.run_curves("control", 1, [{"step": 2, "eval_turn_1/correct": 0.2}])


def test_the_command_writes_the_figure_and_the_series(tmp_path, capsys):
    log = tmp_path / "log_history.json"
    log.write_text(json.dumps(HISTORY))
    out = tmp_path / "figures" / "curves"
    assert (
        protocol_curves.main(
            ["--run", "trloo", "0", str(log), "--run", "control", "0", str(log), "--out", str(out)]
        )
        == 0
    )
    assert out.with_suffix(".png").stat().st_size > 10_000
    series = json.loads(out.with_suffix(".json").read_text())
    assert [(run["arm"], run["seed"]) for run in series] == [("trloo", 0), ("control", 0)]
    assert "trloo 0 | 20.0 | 30.0 | 1.0" in capsys.readouterr().out
    broken = tmp_path / "broken.json"
    broken.write_text('[{"step": 1}]')
    with pytest.raises(SystemExit):
        protocol_curves.main(["--run", "trloo", "1", str(broken), "--out", str(out)])
    assert "broken.json" in capsys.readouterr().err


def test_the_runs_folder_gives_every_finished_runs_curves(tmp_path, capsys):
    runs = tmp_path / "runs"
    for session, arm in [("s1", "trloo"), ("s2", "control")]:
        run = runs / session / f"run_{arm}_0"
        (run / f"eval_rl_{arm}_0").mkdir(parents=True)
        (run / f"eval_rl_{arm}_0" / "summary.json").write_text("{}")
        (run / f"rl_{arm}_0_log_history.json").write_text(json.dumps(HISTORY))
        (runs / session / "sft" / "eval_sft").mkdir(parents=True)
        (runs / session / "sft" / "eval_sft" / "summary.json").write_text("{}")
    out = tmp_path / "curves"
    assert protocol_curves.main(["--runs", str(runs), "--out", str(out)]) == 0
    series = json.loads(out.with_suffix(".json").read_text())
    assert [(run["arm"], run["seed"]) for run in series] == [("trloo", 0), ("control", 0)]
    with pytest.raises(SystemExit):  # one of the two ways, not both
        protocol_curves.main(["--runs", str(runs), "--run", "trloo", "0", "x.json", "--out", str(out)])
