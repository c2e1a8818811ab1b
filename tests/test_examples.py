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
