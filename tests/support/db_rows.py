"""Tiny, explicit fixtures for the dataset_builder tests: reference programs and upstream-like rows."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def reference(
    expr: str = "torch.relu(x)", *, model: str = "Model", inputs: bool = True, init: bool = True
) -> str:
    """A small KernelBench-style program computing `expr` from `x` (parts can be left out)."""
    parts = [
        "import torch\nimport torch.nn as nn\n\nN = 64\n",
        f"class {model}(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n"
        f"    def forward(self, x):\n        return {expr}\n",
    ]
    if inputs:
        parts.append("def get_inputs():\n    return [torch.randn(4, N)]\n")
    if init:
        parts.append("def get_init_inputs():\n    return []\n")
    return "\n\n".join(parts)


def upstream_row(index: int, ref: str, ops: str = '["torch.relu"]') -> dict:
    """A row as published in hkust-nlp/drkernel-rl-data (ops JSON-encoded, level a string)."""
    return {
        "data_source": "cuda_llm",
        "prompt": [{"role": "user", "content": f"Write Triton kernels for:\n```python\n{ref}\n```"}],
        "ability": "kernel_optimization",
        "reward_model": {"style": "rule", "ground_truth": ref},
        "extra_info": {
            "entry_point": "Model",
            "level": "0",
            "module_name": f"module_{index}",
            "ops": ops,
            "original_prompt": [{"role": "user", "content": f"Write CUDA kernels for:\n{ref}"}],
            "repo_name": "synth",
            "type": "nn_module",
            "uuid": f"cuda_llm_{index}",
        },
    }


def cudallm_row(index: int, ref: str) -> dict:
    """A cudaLLM-style verl row: CUDA prompt, reference in reward_model.ground_truth, sparse extra_info."""
    return {
        "data_source": "cuda_llm",
        "prompt": [{"role": "user", "content": f"Write a CUDA kernel (load_inline) for:\n{ref}"}],
        "ability": "kernel_optimization",
        "reward_model": {"style": "rule", "ground_truth": ref},
        "extra_info": {"index": index, "ops": '["torch.relu"]', "level": 1, "module_name": f"m{index}"},
    }


def write_parquet(rows: list[dict], path: Path, row_group_size: int = 2) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def write_jsonl(rows: list[dict], path: Path) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def distinct_references(count: int) -> list[str]:
    """`count` references that differ after normalisation."""
    return [reference(f"torch.relu(x) * {i + 1}.0") for i in range(count)]
