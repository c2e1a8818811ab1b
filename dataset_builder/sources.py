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
"""

from __future__ import annotations

import ast
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .checks import content_uuid
from .features import (
    ARROW_SCHEMA,
    EXTRA_INFO_FIELDS,
    REWARD_MODEL_FIELDS,
    TOP_LEVEL_COLUMNS,
    OpsFormatError,
    parse_ops,
)
from .prompt import first_turn_messages

logger = logging.getLogger(__name__)

ABILITY = "kernel_optimization"
_ROW_FILE_SUFFIXES = (".parquet", ".jsonl", ".json")


class SourceFormat(StrEnum):
    DRKERNEL = "drkernel"
    CUDALLM = "cudallm"
    KERNELBENCH = "kernelbench"
    SAMPLE = "sample"


class SourceError(ValueError):
    """Malformed source input; the message names the file, row and column at fault."""


@dataclass(frozen=True)
class Chunk:
    """One unit of conversion work: rows [start, stop) of `path` (a Parquet row group is one chunk)."""

    format: SourceFormat
    path: str | None  # row file, problem folder, or None for the shipped task set
    start: int = 0
    stop: int = 0
    row_group: int | None = None  # Parquet only
    byte_range: tuple[int, int] | None = None  # JSON Lines only: the bytes holding lines start+1 .. stop
    preset: str = "small"  # sample only


@dataclass(frozen=True)
class SourceRow:
    """A converted row and where it came from (`where` is quoted in reports and errors)."""

    where: str
    row: dict[str, Any]

    @property
    def reference(self) -> str:
        return self.row["reward_model"]["ground_truth"]

    @property
    def uuid(self) -> str:
        return self.row["extra_info"]["uuid"]

    @property
    def entry_point(self) -> str:
        return self.row["extra_info"]["entry_point"] or "Model"


# ---------------------------------------------------------------------------------------------------------
# Planning: cut a source into chunks
# ---------------------------------------------------------------------------------------------------------


def _row_files(source: Path) -> list[Path]:
    if source.is_file():
        return [source]
    if source.is_dir():
        files = sorted(p for p in source.rglob("*") if p.is_file() and p.suffix in _ROW_FILE_SUFFIXES)
        if not files:
            raise SourceError(f"{source}: no {', '.join(_ROW_FILE_SUFFIXES)} files in this folder")
        return files
    raise SourceError(f"{source}: no such file or folder")


def plan_chunks(
    fmt: SourceFormat | str, source: str | None, *, preset: str = "small", chunk_rows: int = 64
) -> list[Chunk]:
    """The chunks of `source` in row order; `chunk_rows` sizes kernelbench / sample chunks."""
    fmt = SourceFormat(fmt)
    if fmt is SourceFormat.SAMPLE:
        from .tasks import task_names  # the shipped task set (imported lazily: it is only needed here)

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
        count = len(_problem_files(path))
        if count == 0:
            raise SourceError(f"{path}: no *.py problem files in this folder")
        return [Chunk(fmt, str(path), s, min(s + chunk_rows, count)) for s in range(0, count, chunk_rows)]
    chunks = []
    for file in _row_files(path):
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


def _problem_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if p.is_file() and not p.name.startswith("_"))


# ---------------------------------------------------------------------------------------------------------
# Reading: chunk -> converted rows
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkTable:
    """The converted rows of a chunk as one FEATURES-typed Arrow table, with where each row came from."""

    table: pa.Table
    wheres: list[str]

    def column(self, struct: str, name: str) -> list[Any]:
        return self.table.column(struct).combine_chunks().field(name).to_pylist()


def read_table(chunk: Chunk, template_path: str | None = None) -> ChunkTable:
    """Convert one chunk into an Arrow table of ARROW_SCHEMA (raises SourceError on malformed input).

    Upstream Parquet row groups whose Arrow schema is the published one take a vectorised path (only
    `ops` is decoded row by row); anything else goes through the row-by-row converters, which are also
    what names the row and column when a vectorised check fails.
    """
    if chunk.format is SourceFormat.DRKERNEL and chunk.row_group is not None:
        fast = _drkernel_table(chunk)
        if fast is not None:
            return fast
    rows = read_chunk(chunk, template_path)
    return ChunkTable(
        pa.Table.from_pylist([r.row for r in rows], schema=ARROW_SCHEMA), [r.where for r in rows]
    )


def _field_names(data_type: pa.DataType) -> list[str]:
    return [data_type.field(i).name for i in range(data_type.num_fields)]


def _drkernel_table(chunk: Chunk) -> ChunkTable | None:
    """Vectorised drkernel conversion of a Parquet row group; None when a row needs the row-by-row path."""
    table = pq.ParquetFile(chunk.path).read_row_group(chunk.row_group)
    if sorted(table.column_names) != sorted(TOP_LEVEL_COLUMNS):
        return None
    extra = table.column("extra_info").combine_chunks()
    reward = table.column("reward_model").combine_chunks()
    if (
        not pa.types.is_struct(extra.type)
        or not pa.types.is_struct(reward.type)
        or sorted(_field_names(extra.type)) != sorted(EXTRA_INFO_FIELDS)
        or sorted(_field_names(reward.type)) != sorted(REWARD_MODEL_FIELDS)
        or extra.null_count
        or reward.null_count
    ):
        return None
    ground_truth, uuid, prompt = reward.field("ground_truth"), extra.field("uuid"), table.column("prompt")
    for array in (ground_truth, uuid):
        if not pa.types.is_string(array.type) and not pa.types.is_large_string(array.type):
            return None
        if array.null_count or pc.any(pc.equal(pc.utf8_trim_whitespace(array), "")).as_py():
            return None
    if prompt.null_count or pc.any(pc.equal(pc.list_value_length(prompt), 0)).as_py():
        return None
    wheres = [f"{chunk.path} row {chunk.start + i}" for i in range(table.num_rows)]
    ops_column = extra.field("ops")
    if pa.types.is_string(ops_column.type) or pa.types.is_large_string(ops_column.type):
        ops_column = pa.array(
            [_ops(v, w) for v, w in zip(ops_column.to_pylist(), wheres, strict=True)], pa.list_(pa.string())
        )
    fields = {name: (ops_column if name == "ops" else extra.field(name)) for name in EXTRA_INFO_FIELDS}
    extra_type = ARROW_SCHEMA.field("extra_info").type
    try:
        new_extra = pa.StructArray.from_arrays(
            [fields[name].cast(extra_type.field(name).type) for name in EXTRA_INFO_FIELDS],
            fields=list(extra_type),
        )
        columns = {name: table.column(name) for name in TOP_LEVEL_COLUMNS}
        columns["extra_info"] = new_extra
        columns["reward_model"] = pa.StructArray.from_arrays(
            [reward.field(name) for name in REWARD_MODEL_FIELDS], names=list(REWARD_MODEL_FIELDS)
        )
        converted = pa.Table.from_arrays(
            [columns[name] for name in TOP_LEVEL_COLUMNS], names=list(TOP_LEVEL_COLUMNS)
        )
        return ChunkTable(converted.cast(ARROW_SCHEMA), wheres)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None  # some column has another type: the row-by-row path says which


def read_chunk(chunk: Chunk, template_path: str | None = None) -> list[SourceRow]:
    """Convert the rows of one chunk (raises SourceError on malformed input)."""
    if chunk.format is SourceFormat.SAMPLE:
        return _sample_rows(chunk, template_path)
    if chunk.format is SourceFormat.KERNELBENCH:
        return _kernelbench_rows(chunk, template_path)
    convert = _drkernel_row if chunk.format is SourceFormat.DRKERNEL else _cudallm_row
    return [SourceRow(where, convert(record, where, template_path)) for where, record in _records(chunk)]


def _records(chunk: Chunk) -> Iterator[tuple[str, dict[str, Any]]]:
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


# Field checks shared by the row formats -------------------------------------------------------------------


def _string(value: Any, where: str, column: str, *, required: bool) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        found = "empty string" if isinstance(value, str) else type(value).__name__
        raise SourceError(f"{where}, column {column}: expected a non-empty string, found {found}")
    return value


def _struct(value: Any, where: str, column: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise SourceError(f"{where}, column {column}: expected a struct/object, found {type(value).__name__}")
    return value


def _messages(value: Any, where: str, column: str, *, required: bool) -> list[dict[str, str]]:
    if value is None and not required:
        return []
    if isinstance(value, str):  # some exports JSON-encode nested columns
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{where}, column {column}: string is not a JSON list of messages") from exc
    if not isinstance(value, list) or (required and not value):
        raise SourceError(
            f"{where}, column {column}: expected a non-empty list of {{role, content}} messages"
        )
    messages = []
    for index, message in enumerate(value):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise SourceError(
                f"{where}, column {column}[{index}]: expected exactly the keys role and content"
            )
        _string(message["role"], where, f"{column}[{index}].role", required=True)
        _string(message["content"], where, f"{column}[{index}].content", required=False)
        messages.append({"role": message["role"], "content": message["content"]})
    return messages


def _ops(value: Any, where: str) -> list[str]:
    try:
        return parse_ops(value)
    except OpsFormatError as exc:
        raise SourceError(f"{where}, column extra_info.ops: {exc}") from exc


def _exact_keys(record: dict[str, Any], expected: tuple[str, ...], where: str, prefix: str) -> None:
    if len(record) == len(expected) and all(k in record for k in expected):
        return
    missing = [k for k in expected if k not in record]
    extra = [k for k in record if k not in expected]
    if missing:
        raise SourceError(f"{where}: missing column {prefix}{missing[0]}")
    if extra:
        raise SourceError(
            f"{where}: unexpected column {prefix}{extra[0]} (drkernel rows are converted losslessly; "
            "use --format cudallm for rows in another layout)"
        )


# drkernel ---------------------------------------------------------------------------------------------------


def _drkernel_row(record: dict[str, Any], where: str, template_path: str | None) -> dict[str, Any]:
    """Upstream row -> FEATURES row: every value kept as is, `ops` decoded from JSON."""
    del template_path  # upstream prompts are kept verbatim
    _exact_keys(record, TOP_LEVEL_COLUMNS, where, "")
    reward = _struct(record["reward_model"], where, "reward_model")
    _exact_keys(reward, REWARD_MODEL_FIELDS, where, "reward_model.")
    extra = _struct(record["extra_info"], where, "extra_info")
    _exact_keys(extra, EXTRA_INFO_FIELDS, where, "extra_info.")
    _string(reward["ground_truth"], where, "reward_model.ground_truth", required=True)
    _string(extra["uuid"], where, "extra_info.uuid", required=True)
    for column in ("data_source", "ability"):
        _string(record[column], where, column, required=False)
    for name in ("entry_point", "level", "module_name", "repo_name", "type"):
        _string(extra[name], where, f"extra_info.{name}", required=False)
    _string(reward["style"], where, "reward_model.style", required=False)
    return {
        "data_source": record["data_source"],
        "prompt": _messages(record["prompt"], where, "prompt", required=True),
        "ability": record["ability"],
        "reward_model": {"style": reward["style"], "ground_truth": reward["ground_truth"]},
        "extra_info": {
            "entry_point": extra["entry_point"],
            "level": extra["level"],
            "module_name": extra["module_name"],
            "ops": _ops(extra["ops"], where),
            "original_prompt": _messages(
                extra["original_prompt"], where, "extra_info.original_prompt", required=False
            ),
            "repo_name": extra["repo_name"],
            "type": extra["type"],
            "uuid": extra["uuid"],
        },
    }


# cudallm ----------------------------------------------------------------------------------------------------

_warned_fields: set[tuple[str, str]] = set()


def _cudallm_row(record: dict[str, Any], where: str, template_path: str | None) -> dict[str, Any]:
    """verl row with a CUDA prompt -> FEATURES row with the Triton prompt rebuilt from the reference."""
    for column in ("prompt", "reward_model"):
        if column not in record:
            raise SourceError(f"{where}: missing column {column}")
    reward = _struct(record["reward_model"], where, "reward_model")
    if "ground_truth" not in reward:
        raise SourceError(f"{where}: missing column reward_model.ground_truth")
    reference = _string(reward["ground_truth"], where, "reward_model.ground_truth", required=True)
    original = _messages(record["prompt"], where, "prompt", required=True)
    extra = _struct(record.get("extra_info") or {}, where, "extra_info")
    ignored = sorted(set(extra) - set(EXTRA_INFO_FIELDS))
    file = where.rsplit(" ", 2)[0]
    for name in ignored:  # say once per file which upstream fields have no place in the schema
        if (file, name) not in _warned_fields:
            _warned_fields.add((file, name))
            logger.warning("%s: extra_info.%s has no column in the schema and is not kept", file, name)
    fields = {}
    for name in ("entry_point", "level", "module_name", "repo_name", "type", "uuid"):
        value = extra.get(name)
        if value is not None and not isinstance(value, str):
            value = str(value)  # cudaLLM exports sometimes store level / index as integers
        fields[name] = value
    return {
        "data_source": _string(record.get("data_source"), where, "data_source", required=False) or "cuda_llm",
        "prompt": first_turn_messages(reference, template_path),
        "ability": _string(record.get("ability"), where, "ability", required=False) or ABILITY,
        "reward_model": {"style": reward.get("style") or "rule", "ground_truth": reference},
        "extra_info": {
            "entry_point": fields["entry_point"] or "Model",
            "level": fields["level"] if fields["level"] is not None else "0",
            "module_name": fields["module_name"],
            "ops": _ops(extra.get("ops"), where),
            "original_prompt": original,
            "repo_name": fields["repo_name"],
            "type": fields["type"],
            "uuid": fields["uuid"] or content_uuid("cuda_llm", reference),
        },
    }


# kernelbench ------------------------------------------------------------------------------------------------

_LEVEL_DIR = re.compile(r"level[_-]?(\d+)", re.IGNORECASE)
_OP_ROOTS = {"torch", "nn", "F"}


def referenced_ops(reference: str) -> list[str]:
    """Sorted dotted names of torch / nn / F callables the program calls (`extra_info.ops` for files)."""
    try:
        tree = ast.parse(reference)
    except (SyntaxError, ValueError):
        return []
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            parts = []
            target = node.func
            while isinstance(target, ast.Attribute):
                parts.append(target.attr)
                target = target.value
            if isinstance(target, ast.Name) and target.id in _OP_ROOTS and parts:
                found.add(".".join([target.id, *reversed(parts)]))
    return sorted(found)


def _kernelbench_rows(chunk: Chunk, template_path: str | None) -> list[SourceRow]:
    folder = Path(chunk.path)
    rows = []
    for file in _problem_files(folder)[chunk.start : chunk.stop]:
        where = str(file)
        try:
            reference = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise SourceError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
        level = _LEVEL_DIR.search(str(file.relative_to(folder.parent)))
        rows.append(
            SourceRow(
                where,
                {
                    "data_source": "kernelbench",
                    "prompt": first_turn_messages(reference, template_path),
                    "ability": ABILITY,
                    "reward_model": {"style": "rule", "ground_truth": reference},
                    "extra_info": {
                        "entry_point": "Model",
                        "level": level.group(1) if level else "",
                        "module_name": file.stem,
                        "ops": referenced_ops(reference),
                        "original_prompt": [],
                        "repo_name": folder.name,
                        "type": "kernelbench",
                        "uuid": content_uuid("kernelbench", reference),
                    },
                },
            )
        )
    return rows


# sample -----------------------------------------------------------------------------------------------------


def _sample_rows(chunk: Chunk, template_path: str | None = None) -> list[SourceRow]:
    from .tasks import load_tasks, task_names

    names = task_names()[chunk.start : chunk.stop]
    rows = []
    for task in load_tasks(preset=chunk.preset, names=names):
        rows.append(
            SourceRow(
                f"task {task.name} ({chunk.preset})",
                {
                    "data_source": "drkernel_rl_tasks",
                    "prompt": first_turn_messages(task.source, template_path),
                    "ability": ABILITY,
                    "reward_model": {"style": "rule", "ground_truth": task.source},
                    "extra_info": {
                        "entry_point": "Model",
                        "level": task.level,
                        "module_name": task.name,
                        "ops": list(task.ops),
                        "original_prompt": [],
                        "repo_name": "drkernel-rl",
                        "type": task.category,
                        "uuid": content_uuid("drkernel_rl", task.source),
                    },
                },
            )
        )
    return rows
