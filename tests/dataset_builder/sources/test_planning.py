"""sources.planning (with row_files): chunks follow JSON Lines line boundaries and Parquet row groups; files that
cannot be read are named."""

import json

import pytest

import dataset_builder.sources.planning as planning
from dataset_builder.sources.formats import SourceError
from dataset_builder.sources.planning import plan_chunks
from dataset_builder.sources.reading import read_chunk
from tests.support.db_rows import reference, upstream_row, write_jsonl, write_parquet

from .support import read_all


def test_jsonl_files_are_cut_at_line_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(planning, "JSONL_CHUNK_LINES", 2)
    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(5)]
    path = write_jsonl(rows, tmp_path / "up.jsonl")
    chunks = plan_chunks("drkernel", str(path))
    assert [(c.start, c.stop) for c in chunks] == [(0, 2), (2, 4), (4, 5)]
    read = [r for c in chunks for r in read_chunk(c)]
    assert [r.uuid for r in read] == [f"cuda_llm_{i}" for i in range(5)]
    assert read[4].where == f"{path} line 5"


def test_parquet_chunks_follow_row_groups(tmp_path):
    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(5)]
    chunks = plan_chunks("drkernel", str(write_parquet(rows, tmp_path / "up.parquet", row_group_size=2)))
    assert [(c.start, c.stop) for c in chunks] == [(0, 2), (2, 4), (4, 5)]
    assert [r.where for r in read_chunk(chunks[2])] == [f"{tmp_path / 'up.parquet'} row 4"]


def test_unreadable_files_are_named(tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    with pytest.raises(SourceError, match="broken.parquet: not a readable Parquet file"):
        plan_chunks("drkernel", str(broken))
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text(json.dumps(upstream_row(0, reference())) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(SourceError, match="bad.jsonl line 2: invalid JSON"):
        read_all("drkernel", str(bad_json))
    with pytest.raises(SourceError, match="no such file"):
        plan_chunks("drkernel", str(tmp_path / "nowhere"))
