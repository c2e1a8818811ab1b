"""sources.cudallm: the Triton prompt rebuilt from the reference, the upstream prompt kept, errors named."""

import pytest

from dataset_builder.checks import content_uuid
from dataset_builder.prompt import render_first_turn
from dataset_builder.sources.formats import SourceError
from tests.support.db_rows import cudallm_row, reference, write_jsonl, write_parquet

from .support import read_all


def test_cudallm_rows_get_the_triton_prompt_and_keep_the_original(tmp_path, caplog):
    refs = [reference(f"x + {i}.0") for i in range(3)]
    rows = [cudallm_row(i, ref) for i, ref in enumerate(refs)]
    rows[2]["extra_info"]["uuid"] = "cuda_llm_77"
    converted = read_all("cudallm", str(write_parquet(rows, tmp_path / "c.parquet")))
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
        read_all("cudallm", str(write_jsonl([row], tmp_path / "c.jsonl")))
