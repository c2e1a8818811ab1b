"""scripts/pipeline.py (the README's main job) and benchmarks/bench_dataset.py: subprocess smoke runs."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pipeline_builds_and_validates_the_shipped_tasks(tmp_path):
    from dataset_builder.tasks import task_names

    result = subprocess.run(
        [
            sys.executable,
            "scripts/pipeline.py",
            "--out",
            str(tmp_path),
            "--preset",
            "small",
            "--stages",
            "build",
            "validate",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "== stage build ==" in result.stdout and "0 problem(s)" in result.stdout
    summary = json.loads((tmp_path / "pipeline_summary.json").read_text(encoding="utf-8"))
    assert summary["build"]["rows_kept"] == len(task_names()) and summary["build"]["preset"] == "small"
    assert summary["validate"]["ok"] is True
    assert sorted(p.name for p in (tmp_path / "dataset").iterdir()) == ["README.md", "data"]


def test_bench_dataset_runs_at_a_tiny_size(tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [
            sys.executable,
            "benchmarks/bench_dataset.py",
            "--rows",
            "300",
            "--num-proc",
            "1",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["rows_kept"] == 300 and data["dropped"] == {}
    for key in ("build_s", "first_load_s", "cached_reload_s", "streaming_s", "peak_mem_gb"):
        assert data[key] > 0, key
    assert "cached reload" in result.stdout
