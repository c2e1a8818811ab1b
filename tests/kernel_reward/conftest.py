"""Fixtures for kernel_reward tests: run one evaluation in a one-shot worker SUBPROCESS.

Candidates are hostile or broken by design; running them through ``python -m kernel_reward.judge.pipeline`` in a child
process means a candidate that crashes or exits cannot take pytest down with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel_reward.options import EvalOptions
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult

REPO_ROOT = Path(__file__).resolve().parents[2]
LEDGER_ENV = (
    "KR_TEST_LAUNCH_LEDGER"  # "1": GPU evaluations run with the launch ledger (tools/gpu_judge_check.sh)
)


def run_interpreted_probe(source: str, timeout_s: float = 180) -> dict:
    """Run a probe script under the Triton interpreter in a fresh process (TRITON_INTERPRET=1 must be set before
    triton is imported) and return the JSON object its last line of output prints."""
    proc = subprocess.run(
        [sys.executable, "-c", source],
        cwd=REPO_ROOT,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_worker_subprocess(
    reference: str, candidate: str, *, device: str = "cpu", tmp_path: Path, timeout_s: float = 240, **options
) -> EvalResult:
    """Evaluate in a fresh ``python -m kernel_reward.judge.pipeline`` process and return its EvalResult."""
    options.setdefault("seed_base", 1234)
    request = EvalRequest(reference, candidate, device=device, options=EvalOptions(**options))
    request_path = tmp_path / "request.json"
    out_path = tmp_path / "result.json"
    request_path.write_text(request.to_json())
    env = dict(os.environ)
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    work_dir = tmp_path / "work"
    work_dir.mkdir(exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kernel_reward.judge.pipeline",
            "--request",
            str(request_path),
            "--out",
            str(out_path),
            "--work-dir",
            str(work_dir),
            *(["--launch-ledger"] if device != "cpu" and os.environ.get(LEDGER_ENV) == "1" else []),
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if not out_path.exists():
        raise AssertionError(
            f"worker wrote no result (exit {proc.returncode})\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-4000:]}"
        )
    return EvalResult.from_dict(json.loads(out_path.read_text()))


@pytest.fixture
def evaluate_subprocess(tmp_path):
    """Callable fixture: ``evaluate_subprocess(reference, candidate, device="cpu", **options) -> EvalResult``."""
    counter = iter(range(10_000))

    def run(reference: str, candidate: str, **kwargs) -> EvalResult:
        call_dir = tmp_path / f"call{next(counter)}"
        call_dir.mkdir()
        return run_worker_subprocess(reference, candidate, tmp_path=call_dir, **kwargs)

    return run
