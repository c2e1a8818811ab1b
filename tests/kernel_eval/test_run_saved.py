"""Saved completions through the real kernel_reward Evaluator on CPU (Triton interpreter), end to end via
scripts/evaluate.py: an honest Triton SiLU, a wrong one, a decoy-kernel hack and an unformatted answer, with
the rates they must produce."""

import json
import subprocess
import sys
from pathlib import Path

from tests.support.eval_fakes import write_shipped_dataset
from tests.support.eval_programs import DECOY, HONEST, UNFORMATTED, WRONG

ROOT = Path(__file__).resolve().parents[2]

# sample -> completions by turn; sample 2 stops after its first turn.
TRAJECTORIES = {0: [UNFORMATTED, HONEST], 1: [WRONG, DECOY], 2: [HONEST]}


def test_saved_completions_real_evaluator(tmp_path):
    dataset = write_shipped_dataset(tmp_path / "dataset", ["activation_silu", "softmax_rows"])
    completions = tmp_path / "completions.jsonl"
    completions.write_text(
        "".join(
            json.dumps({"uuid": "activation_silu", "sample": s, "turn": t, "completion": c}) + "\n"
            for s, turns in TRAJECTORIES.items()
            for t, c in enumerate(turns, start=1)
        )
    )
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        str(ROOT / "scripts" / "evaluate.py"),
        "--dataset",
        str(dataset),
        "--completions",
        str(completions),
        "--out",
        str(out),
        "--device",
        "cpu",
        "--timeout",
        "120",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"report: {out}/report.md" in done.stdout

    summary = json.loads((out / "summary.json").read_text())
    # Only the task with completions is evaluated (softmax_rows has none).
    assert (summary["num_tasks"], summary["num_samples"], summary["num_turns"]) == (1, 3, 2)
    t1, t2 = summary["per_turn"]
    # Turn 1: unformatted, wrong, honest.
    assert (t1["format_rate"], t1["compile_rate"], t1["correct_rate"], t1["hacked_rate"]) == (
        2 / 3,
        2 / 3,
        1 / 3,
        0.0,
    )
    # Turn 2: honest, decoy (compiles, hacked, not correct), honest kept from turn 1.
    assert (t2["format_rate"], t2["compile_rate"], t2["correct_rate"], t2["hacked_rate"]) == (
        1.0,
        1.0,
        2 / 3,
        1 / 3,
    )
    assert summary["correct_rate"] == 2 / 3 and summary["hacked_rate"] == 1 / 3
    assert summary["status_counts"] == {"correct": 2, "hacked": 1}
    # CPU: no timing, so Fast@p is unknown rather than 0.
    assert summary["timing_available"] is False
    assert summary["fast_p"] == {"1": None, "1.2": None, "1.5": None, "2": None}
    assert summary["best_of_history"]["correct_rate"] == 2 / 3

    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 5
    decoy = next(s for s in samples if s["sample"] == 1 and s["turn"] == 2)
    assert decoy["result"]["status"] == "hacked" and decoy["result"]["hack_reasons"]
    assert decoy["code"].lstrip().startswith("import torch") and decoy["prompt"][-1]["role"] == "user"
    assert next(s for s in samples if s["sample"] == 0 and s["turn"] == 1)["code"] is None
    for name in ("fast_p_by_turn", "status_by_turn", "speedup_distribution"):
        assert (out / "plots" / f"{name}.png").is_file()
