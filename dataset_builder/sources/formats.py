"""What a source is and what reading one yields: the formats, the error, a chunk of work, converted rows."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

ABILITY = "kernel_optimization"


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


@dataclass(frozen=True)
class ChunkTable:
    """The converted rows of a chunk as one FEATURES-typed Arrow table, with where each row came from."""

    table: pa.Table
    wheres: list[str]

    def column(self, struct: str, name: str) -> list[Any]:
        return self.table.column(struct).combine_chunks().field(name).to_pylist()
