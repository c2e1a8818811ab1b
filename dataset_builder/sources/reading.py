"""Convert one chunk into rows: `read_chunk` (row dicts, each with where it came from) and `read_table` (one
FEATURES-typed Arrow table). Malformed input raises `SourceError` naming the file, the row and the column."""

from __future__ import annotations

import pyarrow as pa

from ..features import ARROW_SCHEMA
from .cudallm import cudallm_row
from .drkernel import drkernel_row, drkernel_table
from .formats import Chunk, ChunkTable, SourceFormat, SourceRow
from .kernelbench import kernelbench_rows
from .row_files import iter_records
from .sample import sample_rows


def read_table(chunk: Chunk, template_path: str | None = None) -> ChunkTable:
    """Convert one chunk into an Arrow table of ARROW_SCHEMA (raises SourceError on malformed input).

    Upstream Parquet row groups whose Arrow schema is the published one take a vectorised path (only
    `ops` is decoded row by row); anything else goes through the row-by-row converters, which are also
    what names the row and column when a vectorised check fails.
    """
    if chunk.format is SourceFormat.DRKERNEL and chunk.row_group is not None:
        fast = drkernel_table(chunk)
        if fast is not None:
            return fast
    rows = read_chunk(chunk, template_path)
    return ChunkTable(
        pa.Table.from_pylist([r.row for r in rows], schema=ARROW_SCHEMA), [r.where for r in rows]
    )


def read_chunk(chunk: Chunk, template_path: str | None = None) -> list[SourceRow]:
    """Convert the rows of one chunk (raises SourceError on malformed input)."""
    if chunk.format is SourceFormat.SAMPLE:
        return sample_rows(chunk, template_path)
    if chunk.format is SourceFormat.KERNELBENCH:
        return kernelbench_rows(chunk, template_path)
    convert = drkernel_row if chunk.format is SourceFormat.DRKERNEL else cudallm_row
    return [SourceRow(where, convert(record, where, template_path)) for where, record in iter_records(chunk)]
