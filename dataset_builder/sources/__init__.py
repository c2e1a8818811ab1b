"""Readers for the four source formats, each turning its input into rows of the FEATURES layout.

- `drkernel`: upstream `hkust-nlp/drkernel-rl-data` rows (Parquet / JSON Lines), kept losslessly (only
  `extra_info.ops` goes from a JSON string to a list; `features.to_upstream_row` inverts it);
- `cudallm`: `ByteDance-Seed/cudaLLM-data`-style verl rows (the Triton prompt is rebuilt from the reference,
  the upstream one moves to `extra_info.original_prompt`);
- `kernelbench`: a folder of KernelBench-style problem files; `sample`: the task set in
  `dataset_builder.tasks`.

A source is cut into `Chunk`s (a Parquet row group, a JSON file, a slice of problem files or tasks) that
worker processes convert in parallel. Malformed input raises `SourceError` naming the file, row and column.

Modules: ``formats`` (the formats, ``SourceError``, ``Chunk``, ``SourceRow``, ``ChunkTable``), ``planning``,
``row_files``, ``fields`` (shared field checks), one module per format and ``reading`` (``read_chunk`` /
``read_table``).
"""
