"""Static checks and the four source formats (conversion, lossless round trip, malformed input)."""

import json

import pytest

from dataset_builder import to_upstream_row
from dataset_builder.checks import DropReason, content_hash, content_uuid, scan_reference, static_problems
from dataset_builder.prompt import render_first_turn
from dataset_builder.sources import SourceError, SourceFormat, plan_chunks, read_chunk, referenced_ops

from .db_rows import cudallm_row, reference, upstream_row, write_jsonl, write_parquet


def _read_all(fmt, source, **kwargs):
    return [row for chunk in plan_chunks(fmt, source, **kwargs) for row in read_chunk(chunk)]


# -- static checks --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (reference(), []),
        (reference().replace("def forward", "def forward(("), [DropReason.PARSE_ERROR]),
        ("x = 1\0", [DropReason.PARSE_ERROR]),
        (reference(model="Net"), [DropReason.MISSING_MODEL]),
        (reference(inputs=False), [DropReason.MISSING_GET_INPUTS]),
        (reference(init=False), [DropReason.MISSING_GET_INIT_INPUTS]),
        (
            "import torch\n",
            [DropReason.MISSING_MODEL, DropReason.MISSING_GET_INPUTS, DropReason.MISSING_GET_INIT_INPUTS],
        ),
    ],
)
def test_static_problems(source, expected):
    assert static_problems(source) == expected
    assert scan_reference(source)[0] == expected


def test_model_may_be_bound_by_assignment_or_import():
    src = reference(model="Net") + "\nModel = Net\n"
    assert static_problems(src) == []
    assert static_problems(reference(model="Net"), entry_point="Net") == []


def test_content_hash_ignores_comments_and_layout_but_not_code():
    base = reference()
    noisy = "# a comment\n" + base.replace("return torch.relu(x)", "return torch.relu( x )  # why")
    assert content_hash(base) == content_hash(noisy) == scan_reference(noisy)[1]
    assert content_hash(base) != content_hash(reference("torch.tanh(x)"))
    assert content_uuid("p", base) == f"p_{content_hash(base)[:16]}"


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("x = f( a , b )  # why\n\n", "x = f(a, b)", True),
        ('s = "a  # b"', 's = "a # b"', False),  # strings are kept verbatim, comments inside them too
        ('"""doc # text"""\nx = 1', '"""doc # other"""\nx = 1', False),
        ("y = not x", "y = notx", False),  # blanks between words matter
        (
            "if a:\n    if b:\n        c\n    d",
            "if a:\n    if b:\n        c\n        d",
            False,
        ),  # indentation
        ("x = a if b else c", "x = a  if b\telse c", True),
    ],
)
def test_normalisation_is_sound(a, b, same):
    assert (content_hash(a) == content_hash(b)) is same


def test_referenced_ops_lists_torch_calls():
    src = reference("F.gelu(nn.functional.relu(torch.tanh(x)))")
    assert referenced_ops(src) == ["F.gelu", "nn.functional.relu", "torch.randn", "torch.tanh"]


# -- drkernel -------------------------------------------------------------------------------------------------


def test_drkernel_round_trip_is_lossless_field_by_field(tmp_path):
    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(5)]
    rows[3]["extra_info"]["ops"] = '["torch.abs", "nn.Conv2d"]'
    rows[4]["extra_info"]["repo_name"] = None  # nulls survive too
    for path in (write_parquet(rows, tmp_path / "up.parquet"), write_jsonl(rows, tmp_path / "up.jsonl")):
        converted = _read_all("drkernel", str(path))
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
    from dataset_builder.sources import read_table

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
    from dataset_builder.sources import read_table

    rows = [upstream_row(i, reference(f"x * {i}.0")) for i in range(4)]
    mutate(rows[3])
    chunks = plan_chunks("drkernel", str(write_parquet(rows, tmp_path / "up.parquet")))
    with pytest.raises(SourceError, match=message):
        for chunk in chunks:
            read_table(chunk)


def test_jsonl_files_are_cut_at_line_boundaries(tmp_path, monkeypatch):
    import dataset_builder.sources as sources

    monkeypatch.setattr(sources, "JSONL_CHUNK_LINES", 2)
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
        _read_all("drkernel", str(path))
    assert "bad.jsonl" in str(info.value)


def test_unreadable_files_are_named(tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    with pytest.raises(SourceError, match="broken.parquet: not a readable Parquet file"):
        plan_chunks("drkernel", str(broken))
    bad_json = tmp_path / "bad.jsonl"
    bad_json.write_text(json.dumps(upstream_row(0, reference())) + "\n{oops\n", encoding="utf-8")
    with pytest.raises(SourceError, match="bad.jsonl line 2: invalid JSON"):
        _read_all("drkernel", str(bad_json))
    with pytest.raises(SourceError, match="no such file"):
        plan_chunks("drkernel", str(tmp_path / "nowhere"))


# -- cudallm --------------------------------------------------------------------------------------------------


def test_cudallm_rows_get_the_triton_prompt_and_keep_the_original(tmp_path, caplog):
    refs = [reference(f"x + {i}.0") for i in range(3)]
    rows = [cudallm_row(i, ref) for i, ref in enumerate(refs)]
    rows[2]["extra_info"]["uuid"] = "cuda_llm_77"
    converted = _read_all("cudallm", str(write_parquet(rows, tmp_path / "c.parquet")))
    assert len(converted) == 3
    for source_row, ref, out in zip(rows, refs, converted, strict=True):
        assert out.row["prompt"] == [{"role": "user", "content": render_first_turn(ref)}]
        assert out.row["extra_info"]["original_prompt"] == source_row["prompt"]
        assert out.row["reward_model"]["ground_truth"] == ref
        assert out.row["extra_info"]["ops"] == ["torch.relu"]
        assert out.row["extra_info"]["level"] == "1"  # integer upstream level becomes the schema's string
    assert converted[0].uuid == content_uuid("cuda_llm", refs[0])
    assert converted[2].uuid == "cuda_llm_77"
    assert "extra_info.index has no column" in caplog.text  # dropped upstream field is reported, not silent


def test_cudallm_row_without_reference_is_an_error(tmp_path):
    row = cudallm_row(0, reference())
    del row["reward_model"]["ground_truth"]
    with pytest.raises(SourceError, match=r"c.jsonl line 1: missing column reward_model.ground_truth"):
        _read_all("cudallm", str(write_jsonl([row], tmp_path / "c.jsonl")))


# -- kernelbench folder ---------------------------------------------------------------------------------------


def test_kernelbench_folder(tmp_path):
    folder = tmp_path / "KernelBench" / "level2"
    folder.mkdir(parents=True)
    (folder / "1_Relu.py").write_text(reference(), encoding="utf-8")
    (folder / "2_Tanh.py").write_text(reference("torch.tanh(x)"), encoding="utf-8")
    (folder / "_helper.py").write_text("x = 1\n", encoding="utf-8")  # private files are not problems
    rows = _read_all("kernelbench", str(folder), chunk_rows=1)
    assert [r.row["extra_info"]["module_name"] for r in rows] == ["1_Relu", "2_Tanh"]
    first = rows[0].row
    assert first["extra_info"]["level"] == "2"
    assert first["extra_info"]["ops"] == ["torch.randn", "torch.relu"]
    assert first["prompt"][0]["content"] == render_first_turn(reference())
    assert first["extra_info"]["uuid"] == content_uuid("kernelbench", reference())
    with pytest.raises(SourceError, match="takes a folder"):
        plan_chunks("kernelbench", str(folder / "1_Relu.py"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError, match="no \\*.py problem files"):
        plan_chunks("kernelbench", str(empty))


# -- the shipped task set -------------------------------------------------------------------------------------


def test_sample_rows_come_from_the_shipped_tasks():
    from dataset_builder.tasks import load_tasks, task_names

    rows = _read_all(SourceFormat.SAMPLE, None, preset="small", chunk_rows=7)
    assert [r.row["extra_info"]["module_name"] for r in rows] == task_names()
    tasks = {t.name: t for t in load_tasks(preset="small")}
    for row in rows:
        task = tasks[row.row["extra_info"]["module_name"]]
        assert row.reference == task.source
        assert row.row["extra_info"]["ops"] == list(task.ops)
        assert row.row["extra_info"]["level"] == task.level
        assert static_problems(row.reference) == []
    assert len({r.uuid for r in rows}) == len(rows)
    full = _read_all(SourceFormat.SAMPLE, None, preset="full", chunk_rows=100)
    assert [r.reference for r in full] != [r.reference for r in rows]  # the presets differ in sizes only
    assert json.dumps([r.row["extra_info"]["module_name"] for r in full]) == json.dumps(task_names())
