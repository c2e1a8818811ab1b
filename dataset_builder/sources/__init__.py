"""Readers for the four source formats, each turning its input into rows of the FEATURES layout.

- `drkernel`: upstream `hkust-nlp/drkernel-rl-data` rows (Parquet / JSON Lines). Lossless: every field is
  kept as is, only `extra_info.ops` goes from a JSON string to a list (`features.to_upstream_row` inverts it).
- `cudallm`: `ByteDance-Seed/cudaLLM-data`-style verl rows (CUDA prompt, reference in
  `reward_model.ground_truth`). The Triton first-turn prompt is rebuilt from the reference; the upstream
  prompt moves to `extra_info.original_prompt`.
- `kernelbench`: a folder of KernelBench-style problem files (`*.py` with Model / get_inputs / get_init_inputs).
- `sample`: the task set shipped in `dataset_builder.tasks` (a size preset: `small` or `full`).

A source is cut into `Chunk`s (a Parquet row group, a JSON file, a slice of problem files or tasks) so the
builder can convert them in parallel worker processes. Malformed input raises `SourceError` naming the
file, the row and the column.

Modules: ``formats`` (the formats, ``SourceError``, ``Chunk``, ``SourceRow``, ``ChunkTable``), ``planning``
(``plan_chunks``), ``row_files`` (finding row files and reading their raw records), ``fields`` (field checks
shared by the row formats), one module per format (``drkernel``, ``cudallm``, ``kernelbench``, ``sample``),
and ``reading`` (``read_chunk`` / ``read_table``).
"""
