"""reference_checks.cli: ``python -m dataset_builder.reference_checks``, as subprocess runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.reference_programs import BAD, GOOD, TIMEOUT_S


def test_cli_help_and_exit_codes(tmp_path):
    root = Path(__file__).resolve().parents[3]
    cli = [sys.executable, "-m", "dataset_builder.reference_checks"]
    shown = subprocess.run([*cli, "--help"], cwd=root, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0 and "--tasks" in shown.stdout
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(GOOD)
    bad.write_text(BAD["near_zero"][0])
    run = subprocess.run(
        [*cli, str(good), str(bad), "--timeout", str(TIMEOUT_S)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    lines = dict(line.split("\t")[:2] for line in run.stdout.splitlines())
    assert lines[str(good)] == "ok"
    assert "near_constant" in lines[str(bad)].split(",")  # (x * 1e-6 is input-independent at 1e-4 too)
    nothing = subprocess.run(cli, cwd=root, capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 2 and "nothing to check" in nothing.stderr
