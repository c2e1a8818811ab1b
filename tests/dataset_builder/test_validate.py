"""validate_dataset and the command line (subprocess runs: exit codes, messages, --help)."""

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dataset_builder import build_dataset, validate_dataset
from dataset_builder.checks import DropReason
from dataset_builder.features import ARROW_SCHEMA
from dataset_builder.validate import Finding, type_differences
from tests.support.db_rows import distinct_references, reference, upstream_row, write_jsonl

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _built(tmp_path, refs):
    source = write_jsonl([upstream_row(i, ref) for i, ref in enumerate(refs)], tmp_path / "src.jsonl")
    out = tmp_path / "ds"
    build_dataset(str(source), "drkernel", out)
    return out


def _rewrite_rows(out, mutate):
    shard = next((out / "data").glob("*.parquet"))
    rows = pq.read_table(shard).to_pylist()
    mutate(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), shard)


def test_a_clean_build_validates(tmp_path):
    report = validate_dataset(_built(tmp_path, distinct_references(3)))
    assert report.ok and report.rows == 3


def test_row_problems_are_named(tmp_path):
    out = _built(tmp_path, distinct_references(4))

    def mutate(rows):
        rows[1]["extra_info"]["uuid"] = rows[0]["extra_info"]["uuid"]
        rows[2]["reward_model"]["ground_truth"] = reference(inputs=False)
        rows[3]["prompt"] = []
        rows.append(dict(rows[0], extra_info=dict(rows[0]["extra_info"], uuid="fresh")))

    _rewrite_rows(out, mutate)
    report = validate_dataset(out)
    found = {(p.where.split(" (uuid")[0].rsplit("/", 1)[-1], p.finding) for p in report.problems}
    shard = next((out / "data").glob("*.parquet")).name
    assert (f"{shard} row 1", Finding.DUPLICATE_UUID) in found
    assert (f"{shard} row 2", DropReason.MISSING_GET_INPUTS) in found
    assert (f"{shard} row 3", Finding.BAD_PROMPT) in found
    assert (f"{shard} row 4", DropReason.DUPLICATE) in found
    assert ("README.md", Finding.CARD) in found  # card declares 4 rows, data holds 5
    assert not report.ok


def test_schema_break_names_the_column(tmp_path):
    out = _built(tmp_path, distinct_references(2))
    shard = next((out / "data").glob("*.parquet"))
    table = pq.read_table(shard)
    rows = table.to_pylist()
    for row in rows:  # the upstream JSON-string form of ops is a schema break in a built dataset
        row["extra_info"]["ops"] = '["torch.relu"]'
    pq.write_table(pa.Table.from_pylist(rows), shard)
    report = validate_dataset(out)
    assert [p.finding for p in report.problems] == [Finding.SCHEMA]
    assert "column extra_info.ops: expected list<item: string>, found string" in report.problems[0].detail


def test_validate_can_run_the_references(tmp_path):
    out = _built(tmp_path, [reference("torch.tanh(x)"), reference("x * 0.0")])
    report = validate_dataset(out, check_references=True, num_proc=2, reference_timeout_s=60)
    assert DropReason.NEAR_CONSTANT in {p.finding for p in report.problems}  # x * 0 lets a zero kernel pass
    assert all(" row 1 " in p.where for p in report.problems)  # the tanh task is fine


def test_type_differences_reports_missing_and_extra_fields():
    expected = pa.struct([("a", pa.string()), ("b", pa.list_(pa.string()))])
    found = pa.struct([("a", pa.int64()), ("c", pa.string())])
    assert type_differences("x", expected, found) == [
        "column x.a: expected string, found int64",
        "column x.b is missing",
        "column x.c is not in the schema",
    ]


def test_missing_card_and_data(tmp_path):
    out = _built(tmp_path, distinct_references(1))
    (out / "README.md").unlink()
    assert [p.finding for p in validate_dataset(out).problems] == [Finding.CARD]
    assert [p.finding for p in validate_dataset(tmp_path / "nothing").problems] == [Finding.NO_DATA]


def _cli(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "dataset_builder", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_cli_formats_match_the_source_formats():
    from dataset_builder.__main__ import FORMATS
    from dataset_builder.sources.formats import SourceFormat

    assert FORMATS == tuple(f.value for f in SourceFormat)


@pytest.mark.parametrize("command", [[], ["build"], ["validate"], ["push"]])
def test_help(command):
    if command == []:
        result = _cli("--help")
        assert result.returncode == 0 and "build" in result.stdout and "push" in result.stdout
    else:
        result = _cli(*command, "--help")
        assert result.returncode == 0 and "usage:" in result.stdout


def test_cli_build_validate_and_errors(tmp_path):
    out = tmp_path / "sample"
    built = _cli("build", "--out", str(out), "--report-json", str(tmp_path / "r.json"))
    assert built.returncode == 0, built.stderr
    assert "rows kept:" in built.stdout and "rows dropped: 0" in built.stdout
    assert (tmp_path / "r.json").exists()
    checked = _cli("validate", str(out))
    assert checked.returncode == 0 and "0 problem(s)" in checked.stdout

    shard = next((out / "data").glob("*.parquet"))
    rows = pq.read_table(shard).to_pylist()
    rows[2]["reward_model"]["ground_truth"] = "def broken(:\n"
    pq.write_table(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), shard)
    broken = _cli("validate", str(out))
    assert broken.returncode == 1
    assert f"{shard.name} row 2" in broken.stdout and "parse_error" in broken.stdout

    bad_source = tmp_path / "bad.jsonl"
    row = upstream_row(0, reference())
    row["extra_info"]["ops"] = "[oops"
    write_jsonl([row], bad_source)
    failed = _cli("build", "--format", "drkernel", "--source", str(bad_source), "--out", str(tmp_path / "x"))
    assert failed.returncode == 1
    assert "bad.jsonl line 1, column extra_info.ops" in failed.stderr
