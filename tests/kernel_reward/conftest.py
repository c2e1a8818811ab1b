"""Fixtures for kernel_reward tests: run one evaluation in a one-shot worker SUBPROCESS, read the corpus.

Candidates are hostile or broken by design; running them through ``python -m kernel_reward.judge.pipeline`` in a child
process means a candidate that crashes or exits cannot take pytest down with it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernel_reward.options import EvalOptions
from kernel_reward.request import EvalRequest
from kernel_reward.result import EvalResult

CORPUS_DIR = Path(__file__).parent / "corpus"
TASKS_DIR = CORPUS_DIR / "tasks"
REPO_ROOT = Path(__file__).resolve().parents[2]
_HEADER = re.compile(r"^# corpus: (?P<fields>.*)$")


@dataclass(frozen=True)
class CorpusEntry:
    """One corpus candidate and the verdict it must get (from its first line: ``# corpus: key=value ...``)."""

    name: str
    path: Path
    task: str
    expect: str
    expect_cpu: str | None = None
    reason: str | None = None
    gpu_only: bool = False
    options: dict = field(default_factory=dict)
    shape_passed: bool | None = None

    def expected_status(self, device: str) -> str:
        """The verdict it must get; ``a|b`` in the header accepts either (where which check fires first depends
        on the GPU's scheduling, e.g. a side stream that is still writing when the judge reads)."""
        return self.expect_cpu if device == "cpu" and self.expect_cpu else self.expect

    @property
    def source(self) -> str:
        return self.path.read_text()

    @property
    def reference(self) -> str:
        return (TASKS_DIR / f"{self.task}.py").read_text()


def load_corpus() -> list[CorpusEntry]:
    entries = []
    for path in sorted(CORPUS_DIR.glob("*.py")):
        match = _HEADER.match(path.read_text().splitlines()[0])
        if match is None:
            raise ValueError(f"{path.name}: first line must be '# corpus: task=... expect=...'")
        fields: dict[str, str | bool] = {}
        for token in match.group("fields").split():
            key, _, value = token.partition("=")
            fields[key] = value if value else True
        options = {}
        if "shape_check" in fields:
            options["shape_check"] = fields["shape_check"]
        shape_passed = None if "shape_passed" not in fields else fields["shape_passed"] == "true"
        entries.append(CorpusEntry(
            name=path.stem, path=path, task=str(fields["task"]), expect=str(fields["expect"]),
            expect_cpu=fields.get("expect_cpu"), reason=fields.get("reason"), gpu_only=bool(fields.get("gpu")),
            options=options, shape_passed=shape_passed,
        ))
    return entries


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
        [sys.executable, "-m", "kernel_reward.judge.pipeline", "--request", str(request_path), "--out", str(out_path),
         "--work-dir", str(work_dir)],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout_s,
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
