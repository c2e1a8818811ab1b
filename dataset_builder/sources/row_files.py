"""Row files (Parquet, JSON Lines, a JSON array): find them in a source, and read the raw records of a
chunk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from .formats import Chunk, SourceError

_ROW_FILE_SUFFIXES = (".parquet", ".jsonl", ".json")


def list_row_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    if source.is_dir():
        files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in _ROW_FILE_SUFFIXES)
        if not files:
            raise SourceError(f"{source}: no {', '.join(_ROW_FILE_SUFFIXES)} files in this folder")
        return files
    raise SourceError(f"{source}: no such file or folder")


def iter_records(chunk: Chunk) -> Iterator[tuple[str, dict[str, Any]]]:
    path = Path(chunk.path)
    if path.suffix == ".parquet":
        table = pq.ParquetFile(path).read_row_group(chunk.row_group)
        for offset, record in enumerate(table.to_pylist()):
            yield f"{path} row {chunk.start + offset}", record
        return
    if chunk.byte_range is not None:  # JSON Lines: read only this chunk's bytes
        start, stop = chunk.byte_range
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(stop - start)
        for line_no, line in enumerate(data.split(b"\n"), start=chunk.start + 1):
            where = f"{path} line {line_no}"
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SourceError(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
            if text.strip():
                yield where, _json_object(text, where)
        return
    text = path.read_text(encoding="utf-8")
    data = json.loads(text) if text.strip() else []
    if not isinstance(data, list):
        raise SourceError(f"{path}: expected a JSON array of row objects, found {type(data).__name__}")
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            raise SourceError(f"{path} row {index}: expected a JSON object, found {type(record).__name__}")
        yield f"{path} row {index}", record


def _json_object(line: str, where: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SourceError(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(record, dict):
        raise SourceError(f"{where}: expected a JSON object, found {type(record).__name__}")
    return record
