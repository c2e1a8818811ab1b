"""The device scripts' step runner (``tools/device_step.sh``): a step runs only when asked for, and a step that
reaches its limit is interrupted, not killed, so what it would print on the way out (pytest's failures and short
summary, Python's traceback) is in its log. A device call's results are lost otherwise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SLOW_STEP = (
    "import time\n"
    "print('started', flush=True)\n"
    "try:\n"
    "    time.sleep(60)\n"
    "except KeyboardInterrupt:\n"
    "    print('interrupted: the summary so far', flush=True)\n"
    "    raise\n"
)


def run_steps(tmp_path: Path, steps: str) -> str:
    script = (
        f'source "{ROOT}/tools/device_step.sh"\n'
        f'OUT="{tmp_path}"; STEPS="{steps}"; summary="$OUT/summary.txt"; : >"$summary"\n'
        f'device_step slow slow_one 2 "{sys.executable}" -c "$SLOW"\n'
        f"device_step quick quick_one 30 echo quick ran\n"
    )
    shown = subprocess.run(
        ["bash", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={"SLOW": SLOW_STEP, "PATH": "/usr/bin:/bin"},
    )
    assert shown.returncode == 0, shown.stderr
    return (tmp_path / "summary.txt").read_text()


def test_a_step_at_its_limit_prints_its_way_out(tmp_path):
    summary = run_steps(tmp_path, "slow,quick")
    lines = summary.splitlines()
    assert lines[0].startswith("== slow_one: rc=124, ") and lines[1].startswith("== quick_one: rc=0, "), (
        summary
    )
    log = (tmp_path / "slow_one.log").read_text()
    assert "started" in log and "interrupted: the summary so far" in log, log
    assert (tmp_path / "quick_one.log").read_text() == "quick ran\n"


def test_only_the_steps_asked_for_run(tmp_path):
    lines = run_steps(tmp_path, "quick").splitlines()
    assert len(lines) == 1 and lines[0].startswith("== quick_one: rc=0, "), lines
    assert not (tmp_path / "slow_one.log").exists()
