"""`drkernel`: upstream `hkust-nlp/drkernel-rl-data` rows (Parquet / JSON Lines), converted losslessly:
every field is kept as is, only `extra_info.ops` goes from a JSON string to a list
(`features.to_upstream_row` inverts it). Parquet row groups in the published Arrow schema take a vectorised
path."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..features import ARROW_SCHEMA, EXTRA_INFO_FIELDS, REWARD_MODEL_FIELDS, TOP_LEVEL_COLUMNS
from .fields import as_messages, as_ops, as_string, as_struct, check_exact_keys
from .formats import Chunk, ChunkTable


def drkernel_row(record: dict[str, Any], where: str, template_path: str | None) -> dict[str, Any]:
    """Upstream row -> FEATURES row: every value kept as is, `ops` decoded from JSON."""
    del template_path  # upstream prompts are kept verbatim
    check_exact_keys(record, TOP_LEVEL_COLUMNS, where, "")
    reward = as_struct(record["reward_model"], where, "reward_model")
    check_exact_keys(reward, REWARD_MODEL_FIELDS, where, "reward_model.")
    extra = as_struct(record["extra_info"], where, "extra_info")
    check_exact_keys(extra, EXTRA_INFO_FIELDS, where, "extra_info.")
    as_string(reward["ground_truth"], where, "reward_model.ground_truth", required=True)
    as_string(extra["uuid"], where, "extra_info.uuid", required=True)
    for column in ("data_source", "ability"):
        as_string(record[column], where, column, required=False)
    for name in ("entry_point", "level", "module_name", "repo_name", "type"):
        as_string(extra[name], where, f"extra_info.{name}", required=False)
    as_string(reward["style"], where, "reward_model.style", required=False)
    return {
        "data_source": record["data_source"],
        "prompt": as_messages(record["prompt"], where, "prompt", required=True),
        "ability": record["ability"],
        "reward_model": {"style": reward["style"], "ground_truth": reward["ground_truth"]},
        "extra_info": {
            "entry_point": extra["entry_point"],
            "level": extra["level"],
            "module_name": extra["module_name"],
            "ops": as_ops(extra["ops"], where),
            "original_prompt": as_messages(
                extra["original_prompt"], where, "extra_info.original_prompt", required=False
            ),
            "repo_name": extra["repo_name"],
            "type": extra["type"],
            "uuid": extra["uuid"],
        },
    }


def _field_names(data_type: pa.DataType) -> list[str]:
    return [data_type.field(i).name for i in range(data_type.num_fields)]


def drkernel_table(chunk: Chunk) -> ChunkTable | None:
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
            [as_ops(v, w) for v, w in zip(ops_column.to_pylist(), wheres, strict=True)], pa.list_(pa.string())
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
