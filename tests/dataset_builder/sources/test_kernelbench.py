"""sources.kernelbench: the ops a program calls, and a folder of problem files as rows."""

import pytest

from dataset_builder.checks import content_uuid
from dataset_builder.prompt import render_first_turn
from dataset_builder.sources.formats import SourceError
from dataset_builder.sources.kernelbench import referenced_ops
from dataset_builder.sources.planning import plan_chunks
from tests.support.db_rows import reference

from .support import read_all


def test_referenced_ops_lists_torch_calls():
    src = reference("F.gelu(nn.functional.relu(torch.tanh(x)))")
    assert referenced_ops(src) == ["F.gelu", "nn.functional.relu", "torch.randn", "torch.tanh"]


def test_kernelbench_folder(tmp_path):
    folder = tmp_path / "KernelBench" / "level2"
    folder.mkdir(parents=True)
    (folder / "1_Relu.py").write_text(reference(), encoding="utf-8")
    (folder / "2_Tanh.py").write_text(reference("torch.tanh(x)"), encoding="utf-8")
    (folder / "_helper.py").write_text("x = 1\n", encoding="utf-8")  # private files are not problems
    rows = read_all("kernelbench", str(folder), chunk_rows=1)
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
