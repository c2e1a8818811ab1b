"""Cut a source into chunks (a Parquet row group, a slice of a JSON Lines file, a JSON file, a slice of
problem files or tasks) so the builder can convert them in parallel worker processes."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from .formats import Chunk, SourceError, SourceFormat
from .row_files import list_row_files


def plan_chunks(
    fmt: SourceFormat | str, source: str | None, *, preset: str = "small", chunk_rows: int = 64
) -> list[Chunk]:
    """The chunks of `source` in row order; `chunk_rows` sizes kernelbench / sample chunks."""
    fmt = SourceFormat(fmt)
    if fmt is SourceFormat.SAMPLE:
        from ..tasks import task_names  # the shipped task set (imported lazily: it is only needed here)

        count = len(task_names())
        return [
            Chunk(fmt, None, s, min(s + chunk_rows, count), preset=preset)
            for s in range(0, count, chunk_rows)
        ]
    if source is None:
        raise SourceError(f"--source is required for --format {fmt}")
    path = Path(source)
    if fmt is SourceFormat.KERNELBENCH:
        if not path.is_dir():
            raise SourceError(f"{path}: --format kernelbench takes a folder of problem files (*.py)")
        count = len(problem_files(path))
        if count == 0:
            raise SourceError(f"{path}: no *.py problem files in this folder")
        return [Chunk(fmt, str(path), s, min(s + chunk_rows, count)) for s in range(0, count, chunk_rows)]
    chunks = []
    for file in list_row_files(path):
        if file.suffix == ".parquet":
            try:
                meta = pq.ParquetFile(file).metadata
            except Exception as exc:  # pyarrow raises several types for a broken file
                raise SourceError(f"{file}: not a readable Parquet file ({exc})") from exc
            start = 0
            for group in range(meta.num_row_groups):
                rows = meta.row_group(group).num_rows
                chunks.append(Chunk(fmt, str(file), start, start + rows, row_group=group))
                start += rows
        elif file.suffix == ".jsonl":
            chunks += _jsonl_chunks(fmt, file)
        else:  # a JSON array: one chunk per file (rows are only known after parsing it whole)
            chunks.append(Chunk(fmt, str(file)))
    return chunks


JSONL_CHUNK_LINES = 1000  # lines per JSON Lines chunk (about a Parquet row group's worth)


def _jsonl_chunks(fmt: SourceFormat, file: Path) -> list[Chunk]:
    """Cut a JSON Lines file at line boundaries every JSONL_CHUNK_LINES lines (one pass over its bytes)."""
    chunks, first_line, line_no, chunk_start, offset = [], 0, 0, 0, 0
    with open(file, "rb") as fh:
        for line in fh:
            offset += len(line)
            line_no += 1
            if line_no - first_line == JSONL_CHUNK_LINES:
                chunks.append(Chunk(fmt, str(file), first_line, line_no, byte_range=(chunk_start, offset)))
                first_line, chunk_start = line_no, offset
    if line_no > first_line:
        chunks.append(Chunk(fmt, str(file), first_line, line_no, byte_range=(chunk_start, offset)))
    return chunks


def problem_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if p.is_file() and not p.name.startswith("_"))
