"""build_dataset end to end: every source format, every drop reason, the card, shards and load_dataset types."""

import datasets
import pyarrow.parquet as pq
import pytest

from dataset_builder import FEATURES, build_dataset, to_upstream_row
from dataset_builder.builder import BuildError
from dataset_builder.checks import DropReason
from dataset_builder.validate import validate_dataset
from tests.support.db_rows import (
    cudallm_row,
    distinct_references,
    reference,
    upstream_row,
    write_jsonl,
    write_parquet,
)


def _load(out):
    return datasets.load_dataset(str(out), split="train", cache_dir=str(out.parent / "hf-cache"))


def test_drkernel_build_drops_each_static_reason_and_round_trips(tmp_path):
    good = distinct_references(6)
    bad = {
        DropReason.PARSE_ERROR: reference().replace("def forward", "def forward(("),
        DropReason.MISSING_MODEL: reference(model="Net"),
        DropReason.MISSING_GET_INPUTS: reference(inputs=False),
        DropReason.MISSING_GET_INIT_INPUTS: reference(init=False),
        DropReason.DUPLICATE: "# same program, other layout\n" + good[1].replace("return", "return  "),
    }
    refs = good[:3] + list(bad.values()) + good[3:]
    rows = [upstream_row(i, ref) for i, ref in enumerate(refs)]
    source = write_parquet(rows, tmp_path / "upstream.parquet", row_group_size=3)
    out = tmp_path / "ds"
    report = build_dataset(str(source), "drkernel", out, num_proc=2, shard_size=4096)

    assert (report.rows_read, report.rows_kept) == (11, 6)
    assert report.dropped_by_reason() == {reason.value: 1 for reason in bad}
    dropped = {row.reason: row for row in report.dropped}
    assert dropped[DropReason.DUPLICATE].uuid == "cuda_llm_7"
    assert "row 1" in dropped[DropReason.DUPLICATE].detail  # names the first occurrence
    assert dropped[DropReason.PARSE_ERROR].where.endswith("upstream.parquet row 3")

    shards = sorted((out / "data").glob("*.parquet"))
    assert len(shards) > 1 and [s.name for s in shards][-1].endswith(f"-of-{len(shards):05d}.parquet")
    assert all(pq.ParquetFile(s).metadata.row_group(0).column(0).compression == "ZSTD" for s in shards)
    loaded = _load(out)
    assert loaded.features == FEATURES
    kept = [r for r in rows if r["reward_model"]["ground_truth"] in good]
    assert [to_upstream_row(r) for r in loaded] == kept  # order kept, every field back as published
    assert validate_dataset(out).ok


def test_cudallm_and_kernelbench_builds_load_with_declared_types(tmp_path):
    refs = distinct_references(3)
    source = write_jsonl([cudallm_row(i, ref) for i, ref in enumerate(refs)], tmp_path / "cuda.jsonl")
    loaded = _load(_built(tmp_path, source, "cudallm"))
    assert loaded.features == FEATURES and loaded.num_rows == 3
    assert loaded[0]["extra_info"]["original_prompt"][0]["content"].startswith("Write a CUDA kernel")

    folder = tmp_path / "level1"
    folder.mkdir()
    for i, ref in enumerate(refs + [reference(init=False)]):
        (folder / f"{i}_p.py").write_text(ref, encoding="utf-8")
    out = tmp_path / "kb"
    report = build_dataset(str(folder), "kernelbench", out, chunk_rows=2)
    assert report.dropped_by_reason() == {"missing_get_init_inputs": 1}
    loaded = _load(out)
    assert loaded.features == FEATURES
    assert [r["extra_info"]["module_name"] for r in loaded] == ["0_p", "1_p", "2_p"]


@pytest.mark.parametrize(("rows", "shard_size"), [(4, 2000), (5, 3000), (7, 1)])
def test_shards_are_never_empty_and_cover_every_row(tmp_path, rows, shard_size):
    source = write_jsonl(
        [upstream_row(i, ref) for i, ref in enumerate(distinct_references(rows))], tmp_path / "s.jsonl"
    )
    out = tmp_path / "out"
    report = build_dataset(str(source), "drkernel", out, shard_size=shard_size)
    counts = [pq.ParquetFile(out / name).metadata.num_rows for name in report.shards]
    assert len(counts) > 1 and min(counts) > 0 and sum(counts) == rows
    assert _load(out).num_rows == rows


def test_a_build_that_keeps_nothing_is_an_error(tmp_path):
    source = write_jsonl([upstream_row(0, reference(init=False))], tmp_path / "s.jsonl")
    with pytest.raises(BuildError, match="(?s)no rows left.*missing_get_init_inputs: 1"):
        build_dataset(str(source), "drkernel", tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing half-written


def test_prompt_template_override_reaches_rows_and_card(tmp_path):
    template = tmp_path / "short.txt"
    template.write_text(
        "Make it fast with Triton:\n{{REFERENCE_CODE}}\nAnswer with ModelNew.", encoding="utf-8"
    )
    folder = tmp_path / "probs"
    folder.mkdir()
    (folder / "a.py").write_text(reference(), encoding="utf-8")
    out = tmp_path / "out"
    report = build_dataset(str(folder), "kernelbench", out, prompt_template=str(template))
    assert report.prompt_template.startswith("custom-")
    row = _load(out)[0]
    assert (
        row["prompt"][0]["content"]
        == f"Make it fast with Triton:\n{reference().rstrip()}\nAnswer with ModelNew."
    )
    assert report.prompt_template in (out / "README.md").read_text(encoding="utf-8")


def _built(tmp_path, source, fmt):
    out = tmp_path / f"out-{fmt}"
    build_dataset(str(source), fmt, out)
    return out


def test_sample_build_card_and_overwrite(tmp_path):
    from dataset_builder.tasks import task_names

    out = tmp_path / "sample"
    report = build_dataset(None, "sample", out, preset="small")
    assert report.rows_kept == len(task_names()) and not report.dropped
    card = (out / "README.md").read_text(encoding="utf-8")
    for needle in (
        "dataset_info:",
        "configs:",
        "path: data/train-*",
        f"num_examples: {report.rows_kept}",
        "license: mit",
        "revision=",
        "snapshot_download",
        "extra_info.ops",
        "--preset small",
    ):
        assert needle in card, needle
    assert _load(out).features == FEATURES
    with pytest.raises(BuildError, match="--overwrite"):
        build_dataset(None, "sample", out)
    again = build_dataset(None, "sample", out, overwrite=True)
    assert again.rows_kept == report.rows_kept
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(BuildError, match="does not look like a dataset directory"):
        build_dataset(None, "sample", stranger, overwrite=True)


RUNTIME_CASES = {
    DropReason.CRASH: reference("x[:, :, :, 7]"),
    DropReason.TIMEOUT: reference("__import__('time').sleep(120) or x"),
    DropReason.NONDETERMINISTIC: reference("torch.nn.functional.dropout(x, 0.5, training=True)"),
    DropReason.INPUT_INDEPENDENT: reference(
        "torch.arange(x.numel(), dtype=x.dtype).reshape(x.shape) + 0 * x"
    ),
    DropReason.NEAR_CONSTANT: reference("x * 1e-12"),
    DropReason.NO_TENSOR_OUTPUT: reference("None"),
    DropReason.NON_FINITE: reference("x / 0.0"),
}


def test_runtime_verdicts_are_drop_reasons_and_validation_adds_only_its_own_findings():
    """One enum for why a task is unusable: the reference checks' verdicts are DropReasons, and validation's own
    findings (files, uuids, prompts) do not repeat any of them."""
    from dataset_builder.checks import RUNTIME_REASONS
    from dataset_builder.validate import Finding

    assert RUNTIME_REASONS <= set(DropReason)
    assert not {finding.value for finding in Finding} & {reason.value for reason in DropReason}


def test_runtime_checks_use_each_rows_entry_point(tmp_path):
    rows = [
        upstream_row(0, reference("torch.tanh(x)")),
        upstream_row(1, reference("torch.sin(x)", model="Net")),
    ]
    rows[1]["extra_info"]["entry_point"] = "Net"
    source = write_jsonl(rows, tmp_path / "s.jsonl")
    report = build_dataset(str(source), "drkernel", tmp_path / "out", check_references=True, num_proc=2)
    assert report.rows_kept == 2, report.to_text()


def test_runtime_reasons_with_check_references(tmp_path):
    folder = tmp_path / "runtime"
    folder.mkdir()
    (folder / "ok.py").write_text(reference("torch.tanh(x) * 2.0"), encoding="utf-8")
    for reason, ref in RUNTIME_CASES.items():
        (folder / f"{reason.value}.py").write_text(ref, encoding="utf-8")
    report = build_dataset(
        str(folder),
        "kernelbench",
        tmp_path / "out",
        check_references=True,
        reference_timeout_s=10,
        num_proc=2,
    )
    assert report.rows_kept == 1
    found = {row.where.rsplit("/", 1)[-1]: set(row.reasons) for row in report.dropped}
    for reason in RUNTIME_CASES:
        assert reason in found[f"{reason.value}.py"], (reason, found)
