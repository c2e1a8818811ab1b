"""examples/: the commands of examples/README.md give the verdicts its table promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "examples" / "add_relu"


@pytest.mark.parametrize(
    ("candidate", "status", "reasons"),
    [("honest", "correct", []), ("wrong", "incorrect", []), ("hack", "hacked", ["decoy_kernel"])],
)
def test_the_example_answers_get_their_verdicts(candidate, status, reasons):
    command = [sys.executable, "-m", "kernel_reward", "eval", "--reference", str(EXAMPLE / "reference.py")]
    command += ["--candidate", str(EXAMPLE / f"{candidate}.py"), "--device", "cpu", "--json"]
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert (result["status"], result["hack_reasons"]) == (status, reasons), result["error"]
    assert f"[{candidate}.py]" in (REPO_ROOT / "examples" / "README.md").read_text()


def test_the_openenv_example_runs_a_harness_rollout_to_a_correct_kernel():
    pytest.importorskip("openenv", reason="needs the openenv extra")
    command = [sys.executable, str(REPO_ROOT / "examples" / "openenv_rollout.py"), "--device", "cpu"]
    proc = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("submission 1: incorrect") and lines[1].startswith("submission 2: correct")
    assert lines[2] == "rollout reward (verify().env_reward): 1.0  done: True"
    assert "openenv_rollout.py" in (REPO_ROOT / "examples" / "README.md").read_text()
