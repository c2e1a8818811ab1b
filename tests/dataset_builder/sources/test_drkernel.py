"""sources.drkernel: lossless round trip, the vectorised Parquet path against the row path, malformed rows
named by file, row and column."""

import pytest

from dataset_builder import to_upstream_row
from dataset_builder.sources.formats import SourceError
from dataset_builder.sources.planning import plan_chunks
from dataset_builder.sources.reading import read_chunk, read_table
from tests.support.db_rows import reference, upstream_row, write_jsonl, write_parquet

from .support import read_all


def test_drkernel_round_trip_is_lossless_field_by_field(tmp_path):
    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(5)]
    rows[3]["extra_info"]["ops"] = '["torch.abs", "nn.Conv2d"]'
    rows[4]["extra_info"]["repo_name"] = None  # nulls survive too
    for path in (write_parquet(rows, tmp_path / "up.parquet"), write_jsonl(rows, tmp_path / "up.jsonl")):
        converted = read_all("drkernel", str(path))
        assert len(converted) == len(rows)
        for original, row in zip(rows, converted, strict=True):
            assert isinstance(row.row["extra_info"]["ops"], list)
            back = to_upstream_row(row.row)
            assert set(back) == set(original)
            for column in ("data_source", "prompt", "ability", "reward_model"):
                assert back[column] == original[column], column
            assert set(back["extra_info"]) == set(original["extra_info"])
            for name, value in original["extra_info"].items():
                assert back["extra_info"][name] == value, name
    assert converted[3].row["extra_info"]["ops"] == ["torch.abs", "nn.Conv2d"]


def test_vectorised_parquet_path_matches_the_row_path(tmp_path):
    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(4)]
    rows[2]["extra_info"]["ops"] = "[]"
    for chunk in plan_chunks("drkernel", str(write_parquet(rows, tmp_path / "up.parquet"))):
        fast = read_table(chunk)
        slow = read_chunk(chunk)
        assert fast.table.to_pylist() == [r.row for r in slow]
        assert fast.wheres == [r.where for r in slow]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda r: r["reward_model"].update(ground_truth=" "),
            r"up.parquet row 3, column reward_model.ground_truth",
        ),
        (
            lambda r: r["extra_info"].update(ops="{}"),
            r"up.parquet row 3, column extra_info.ops: expected a list",
        ),
        (lambda r: r.update(prompt=[]), r"up.parquet row 3, column prompt: expected a non-empty list"),
    ],
)
def test_bad_parquet_rows_are_named(tmp_path, mutate, message):
    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(4)]
    mutate(rows[3])
    chunks = plan_chunks("drkernel", str(write_parquet(rows, tmp_path / "up.parquet")))
    with pytest.raises(SourceError, match=message):
        for chunk in chunks:
            read_table(chunk)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r["reward_model"].update(ground_truth=""), r"line 2, column reward_model.ground_truth"),
        (
            lambda r: r["extra_info"].update(ops="[torch.abs"),
            r"line 2, column extra_info.ops: not valid JSON",
        ),
        (lambda r: r["extra_info"].pop("uuid"), r"line 2: missing column extra_info.uuid"),
        (lambda r: r.update(prompt=[{"role": "user"}]), r"line 2, column prompt\[0\]"),
        (lambda r: r.update(surprise=1), r"line 2: unexpected column surprise"),
    ],
)
def test_malformed_drkernel_rows_name_file_row_and_column(tmp_path, mutate, message):
    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(3)]
    mutate(rows[1])
    path = write_jsonl(rows, tmp_path / "bad.jsonl")
    with pytest.raises(SourceError, match=message) as info:
        read_all("drkernel", str(path))
    assert "bad.jsonl" in str(info.value)
