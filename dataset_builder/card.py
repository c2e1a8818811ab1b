"""The dataset card (`README.md`): YAML metadata that `datasets` reads back (`dataset_info.features`,
`configs`) and a human part saying what the columns mean, where the rows came from and how to load a
pinned version, online and offline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import datasets
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from .features import FEATURES

if TYPE_CHECKING:
    from .build_report import BuildReport

# Licence and provenance of each source format (background §1: upstream licences).
PROVENANCE = {
    "drkernel": (
        "mit",
        "Rows of `hkust-nlp/drkernel-rl-data` (MIT), itself derived from `ByteDance-Seed/cudaLLM-data` "
        "(Apache-2.0). Prompts and fields are kept as published; `extra_info.ops` is decoded from its JSON "
        "string into a list.",
    ),
    "cudallm": (
        "apache-2.0",
        "Reference programs of `ByteDance-Seed/cudaLLM-data`-style rows (Apache-2.0). The first-turn prompt was "
        "rebuilt for Triton from each reference; the upstream CUDA prompt is kept in `extra_info.original_prompt`.",
    ),
    "kernelbench": (
        "other",
        "A folder of KernelBench-style problem files; check the licence of that folder (KernelBench itself is MIT).",
    ),
    "sample": (
        "mit",
        "The task set shipped inside drkernel-rl (`dataset_builder/tasks`, MIT), written for the project.",
    ),
}

_COLUMNS = """\
| column | type | meaning |
| --- | --- | --- |
| `data_source` | string | where the row came from |
| `prompt` | list of {role, content} | the first-turn chat prompt: exactly one user message, no system prompt |
| `ability` | string | `kernel_optimization` |
| `reward_model.style` | string | `rule`: the reward is computed by running code, not by a model |
| `reward_model.ground_truth` | string | the PyTorch reference program (`Model`, `get_inputs`, `get_init_inputs`) |
| `extra_info.entry_point` | string | the class to optimise (`Model`) |
| `extra_info.level` | string | difficulty level as a string (`"1"` one op, `"2"` fused chain, ...) |
| `extra_info.module_name` | string | name of the program (task or file name) |
| `extra_info.ops` | list of string | torch ops the reference uses (a typed list; upstream stores a JSON string) |
| `extra_info.original_prompt` | list of {role, content} | the upstream prompt when the prompt was rebuilt |
| `extra_info.repo_name` | string | upstream repository / collection |
| `extra_info.type` | string | upstream row type or task category |
| `extra_info.uuid` | string | stable row id; rows without one get `<prefix>_<hash of the normalised reference>` |
"""


def _size_category(rows: int) -> str:
    for limit, label in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
    ):
        if rows < limit:
            return label
    return "n>1M"


CARD_REPO_PLACEHOLDER = "ORG/NAME"  # `push` puts the repository id in its place


def card_text(
    report: BuildReport, *, license: str | None = None, repo_id: str = CARD_REPO_PLACEHOLDER
) -> str:
    """The full README.md for a dataset built as `report` says."""
    default_license, provenance = PROVENANCE[report.format]
    card_data = DatasetCardData(
        license=license or default_license,
        pretty_name="drkernel-rl kernel optimisation tasks",
        task_categories=["text-generation"],
        tags=["triton", "gpu-kernels", "code", "reinforcement-learning"],
        size_categories=[_size_category(report.rows_kept)],
    )
    info = datasets.DatasetInfo(
        features=FEATURES,
        splits=[{"name": "train", "num_bytes": report.num_bytes, "num_examples": report.rows_kept}],
        dataset_size=report.num_bytes,
    )
    DatasetInfosDict({"default": info}).to_dataset_card_data(card_data)
    MetadataConfigs(
        {"default": {"data_files": [{"split": "train", "path": "data/train-*"}]}}
    ).to_dataset_card_data(card_data)
    dropped = report.dropped_by_reason()
    dropped_lines = "\n".join(f"- `{reason}`: {count}" for reason, count in dropped.items()) or "- none"
    checks = (
        "Runtime reference checks were run (crash, timeout, nondeterministic, input-independent, near-constant, "
        "no tensor output)."
        if report.reference_checks
        else "Runtime reference checks were not run (`--check-references` runs them)."
    )
    prompts = (
        "Prompts are kept as published upstream."
        if report.format == "drkernel"
        else f"First-turn prompts rendered with template `{report.prompt_template}`."
    )
    preset = f" --preset {report.preset}" if report.preset else ""
    source = "" if report.format == "sample" else f" --source {report.source}"
    body = f"""
# drkernel-rl kernel optimisation tasks

Each row is one task for reinforcement learning of Triton kernel generation: a PyTorch reference program and
the first-turn prompt asking a model to rewrite it with custom Triton kernels as `ModelNew`. The layout is the
one of `hkust-nlp/drkernel-rl-data` (verl's RL row schema), with `extra_info.ops` typed as a list.

**Rows:** {report.rows_kept} in the `train` split ({len(report.shards)} zstd Parquet shard(s) under `data/`).

## Columns

{_COLUMNS}
## Provenance and licence

{provenance}

Licence of this build: `{license or default_license}`.

## How it was built

    python -m dataset_builder build --format {report.format}{source}{preset} --out DIR

{prompts} Rows read: {report.rows_read}; kept: {report.rows_kept}; dropped: {len(report.dropped)},
by reason:

{dropped_lines}

Static checks drop references that do not parse, lack `Model` / `get_inputs` / `get_init_inputs`, or repeat an
earlier reference after normalisation (comments and layout ignored). {checks}

## Loading a pinned version

Every published version is one commit with a tag (`v1.0`, `v1.1`, ...). Pin it with `revision=`:

```python
from datasets import load_dataset

ds = load_dataset("{repo_id}", revision="v1.0", split="train")
```

Offline, `revision=` is ignored by the cache fallback of `load_dataset` (it returns whatever version was
cached last). Download the version once, then load the local folder:

```python
from huggingface_hub import snapshot_download
from datasets import load_dataset

path = snapshot_download("{repo_id}", repo_type="dataset", revision="v1.0")
ds = load_dataset(path, split="train")  # works with HF_HUB_OFFLINE=1 once downloaded
```
"""
    return f"---\n{card_data.to_yaml()}\n---\n{body}"


def write_card(out_dir: Path, report: BuildReport, *, license: str | None = None) -> Path:
    """Write `out_dir/README.md` and return its path."""
    path = Path(out_dir) / "README.md"
    DatasetCard(card_text(report, license=license)).save(path)
    return path
