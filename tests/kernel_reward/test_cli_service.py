"""``python -m kernel_reward eval`` as a subprocess: exit 0 whenever an evaluation happened, 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support import service_programs as programs

REPO = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kernel_reward", *args], cwd=REPO, capture_output=True, text=True, timeout=180
    )


def test_eval_json_correct_and_incorrect_both_exit_zero(tmp_path):
    ref = tmp_path / "ref.py"
    ref.write_text(programs.REFERENCE_ADD)
    good, bad = tmp_path / "good.py", tmp_path / "bad.md"
    good.write_text(programs.CANDIDATE_ADD)  # plain code
    bad.write_text(programs.fenced(programs.CANDIDATE_WRONG))  # a raw completion
    done = _run(
        "eval",
        "--reference",
        str(ref),
        "--candidate",
        str(good),
        "--device",
        "cpu",
        "--json",
        "--timeout",
        "60",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "correct" and result["mode"] == "interpreter" and result["speedup"] is None
    assert result["isolation"]["wall_clock_s"] > 60
    done = _run("eval", "--reference", str(ref), "--candidate", str(bad), "--device", "cpu")
    assert done.returncode == 0, done.stderr
    assert "status:   incorrect" in done.stdout


def test_eval_bad_input_exits_two(tmp_path):
    done = _run("eval", "--reference", str(tmp_path / "missing.py"), "--candidate", str(tmp_path / "x.py"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: cannot read --reference file {tmp_path / 'missing.py'}: No such file or directory"
    ]
    done = _run("eval", "--reference", "a", "--candidate", "b", "--device", "tpu")
    assert done.returncode == 2


def test_help():
    for args in (["--help"], ["eval", "--help"], ["serve", "--help"]):
        done = _run(*args)
        assert done.returncode == 0 and "usage" in done.stdout


def test_eval_exits_one_when_the_reference_is_broken(tmp_path):
    """A reference without get_inputs is a task problem: no evaluation of the candidate ran, so exit 1 with one
    line on stderr (the result is still printed)."""
    ref = tmp_path / "ref.py"
    ref.write_text(programs.REFERENCE_ADD.replace("def get_inputs", "def get_inputz"))
    cand = tmp_path / "cand.py"
    cand.write_text(programs.CANDIDATE_ADD)
    done = _run(
        "eval", "--reference", str(ref), "--candidate", str(cand), "--device", "cpu", "--timeout", "60"
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "status:   runtime_error" in done.stdout
    assert done.stderr.strip().splitlines()[-1].startswith("error: no evaluation of the candidate could run")
    assert "get_inputs" in done.stderr
